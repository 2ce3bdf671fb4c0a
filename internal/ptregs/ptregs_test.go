package ptregs

import "testing"

// TestLayout checks each table against its kernel's struct pt_regs: 8-byte
// members in order, Size bytes in all, and the offsets the kernel's
// headers give for the registers code generation names.
func TestLayout(t *testing.T) {
	tests := []struct {
		table                  *Table
		ip, ret, sp, mode, arg int
		stackArgs              int
		args                   []int
	}{
		{table: AMD64, ip: 128, ret: 80, sp: 152, mode: 136, args: []int{112, 104, 96, 88, 72, 64}, stackArgs: 8},
		// user_pt_regs: regs[31], sp, pc, pstate.
		{table: ARM64, ip: 256, ret: 0, sp: 248, mode: 264, args: []int{0, 8, 16, 24, 32, 40, 48, 56}, stackArgs: 0},
	}
	for _, tt := range tests {
		t.Run(tt.table.Arch, func(t *testing.T) {
			tab := tt.table
			for i, r := range tab.Registers {
				if r.Offset != 8*i {
					t.Errorf("%s at offset %d, want %d", r.Member, r.Offset, 8*i)
				}
			}
			if tab.Size != 8*len(tab.Registers) {
				t.Errorf("Size = %d, want %d", tab.Size, 8*len(tab.Registers))
			}
			for _, m := range []struct {
				name      string
				got, want int
			}{{"ip", tab.Offset(tab.IP), tt.ip}, {"return", tab.Offset(tab.Return), tt.ret}, {"sp", tab.Offset(tab.SP), tt.sp}, {"mode", tab.Offset(tab.Mode), tt.mode}, {"stack args", tab.StackArgs, tt.stackArgs}} {
				if m.got != m.want {
					t.Errorf("%s at %d, want %d", m.name, m.got, m.want)
				}
			}
			for n, off := range tt.args {
				if got, ok := tab.ArgOffset(n); !ok || got != off {
					t.Errorf("ArgOffset(%d) = %d, %v; want %d", n, got, ok, off)
				}
			}
			for _, n := range []int{-1, len(tt.args)} {
				if _, ok := tab.ArgOffset(n); ok {
					t.Errorf("ArgOffset(%d) is a register", n)
				}
			}
		})
	}
}

// TestARM64Names checks the names arm64's reg() and USDT operands use:
// reg("r22") is x22, whose low half is w22.
func TestARM64Names(t *testing.T) {
	for _, tt := range []struct{ member, q, d string }{{"r0", "x0", "w0"}, {"r22", "x22", "w22"}, {"r30", "x30", "w30"}, {"sp", "sp", "wsp"}, {"pc", "", ""}} {
		r, ok := ARM64.ByMember(tt.member)
		if !ok || r.Q != tt.q || r.D != tt.d {
			t.Errorf("ByMember(%q) = %+v, %v; want Q %q, D %q", tt.member, r, ok, tt.q, tt.d)
		}
	}
}
