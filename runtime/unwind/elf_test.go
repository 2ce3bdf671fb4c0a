package unwind

import (
	"bytes"
	"cmp"
	"debug/elf"
	"encoding/binary"
	"testing"
)

// ehFrameAddr is where the synthetic files' .eh_frame is said to be
// loaded; the FDEs' addresses are absolute, so it matters only for being
// non-zero.
const ehFrameAddr = 0x400000

// minimalELF returns the file of minimalELFBytes, read by debug/elf.
func minimalELF(t testing.TB, m elf.Machine, section []byte) *elf.File {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(minimalELFBytes(t, m, section)))
	if err != nil {
		t.Fatalf("read the synthetic ELF file: %v", err)
	}
	return f
}

// minimalELFBytes wraps section, as .eh_frame, in the smallest 64-bit
// little-endian ELF file debug/elf reads: a header, the section and a
// section name table.
func minimalELFBytes(t testing.TB, m elf.Machine, section []byte) []byte {
	t.Helper()
	names := []byte("\x00.eh_frame\x00.shstrtab\x00")
	const hdrSize, shdrSize = 64, 64
	dataOff := uint64(hdrSize)
	namesOff := dataOff + uint64(len(section))
	shOff := namesOff + uint64(len(names))
	var buf bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(elf.ET_DYN), Machine: uint16(m), Version: uint32(elf.EV_CURRENT),
		Shoff: shOff, Ehsize: hdrSize, Shentsize: shdrSize, Shnum: 3, Shstrndx: 2,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	sections := []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Flags: uint64(elf.SHF_ALLOC), Addr: ehFrameAddr, Off: dataOff, Size: uint64(len(section)), Addralign: 8},
		{Name: 11, Type: uint32(elf.SHT_STRTAB), Off: namesOff, Size: uint64(len(names)), Addralign: 1},
	}
	for _, part := range []any{hdr, section, names, sections} {
		if err := binary.Write(&buf, binary.LittleEndian, part); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// cieParams are a CIE's alignment factors, return address column,
// initial instructions and pointer encoding ('R'; 0 stands for udata4,
// absolute).
type cieParams struct {
	caf     uint64
	daf     int64
	ra      byte
	initial []byte
	enc     byte
}

// x86CIE is what gcc emits on x86-64: CFA = rsp+8, return address at
// CFA-8.
var x86CIE = cieParams{caf: 1, daf: -8, ra: 16, initial: []byte{opDefCFA, 7, 8, opOffset | 16, 1}}

// arm64CIE is what gcc emits on arm64: CFA = sp, x30 in its register.
var arm64CIE = cieParams{caf: 4, daf: -8, ra: 30, initial: []byte{opDefCFA, 31, 0}}

// ehFrame assembles an .eh_frame holding one CIE ("zR", addresses as 4-byte
// values, absolute or pc-relative) and one FDE covering [begin,
// begin+size) with program, then the zero terminator.
func ehFrame(cie cieParams, begin, size uint32, program []byte) []byte {
	var b []byte
	le := binary.LittleEndian
	body := []byte{1, 'z', 'R', 0}
	body = appendULEB(body, cie.caf)
	body = appendSLEB(body, cie.daf)
	enc := cmp.Or(cie.enc, encUdata4)
	body = append(body, cie.ra, 1, enc) // augmentation data: 1 byte, the encoding
	body = append(body, cie.initial...)
	b = le.AppendUint32(b, uint32(4+len(body)))
	b = le.AppendUint32(b, 0)
	b = append(b, body...)
	fdeAt := len(b)
	var fde []byte
	fde = le.AppendUint32(fde, uint32(fdeAt+4)) // back to the CIE from this field
	if enc&0x70 == encPCRel {
		begin -= uint32(ehFrameAddr + fdeAt + 8) // relative to the field itself
	}
	fde = le.AppendUint32(fde, begin)
	fde = le.AppendUint32(fde, size)
	fde = append(fde, 0) // no augmentation data
	fde = append(fde, program...)
	b = le.AppendUint32(b, uint32(len(fde)))
	b = append(b, fde...)
	return le.AppendUint32(b, 0)
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		if v >>= 7; v != 0 {
			b = append(b, c|0x80)
			continue
		}
		return append(b, c)
	}
}

func appendSLEB(b []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
