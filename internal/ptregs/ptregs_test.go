package ptregs

import "testing"

// TestLayout checks the table against struct pt_regs's layout: 8-byte
// members in order, Size bytes in all, and the offsets the kernel's
// header gives for the registers code generation names.
func TestLayout(t *testing.T) {
	for i, r := range Registers {
		if r.Offset != 8*i {
			t.Errorf("%s at offset %d, want %d", r.Member, r.Offset, 8*i)
		}
	}
	if Size != 8*len(Registers) {
		t.Errorf("Size = %d, want %d", Size, 8*len(Registers))
	}
	for _, tc := range []struct {
		name string
		got  int
		want int
	}{{"ip", IP, 128}, {"ax", AX, 80}} {
		if tc.got != tc.want {
			t.Errorf("%s at %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestArgs checks the argument registers of the x86-64 calling
// convention: rdi rsi rdx rcx r8 r9.
func TestArgs(t *testing.T) {
	want := []int{112, 104, 96, 88, 72, 64}
	for n, off := range want {
		if got, ok := ArgOffset(n); !ok || got != off {
			t.Errorf("ArgOffset(%d) = %d, %v; want %d", n, got, ok, off)
		}
	}
	for _, n := range []int{-1, len(want)} {
		if _, ok := ArgOffset(n); ok {
			t.Errorf("ArgOffset(%d) is a register", n)
		}
	}
}
