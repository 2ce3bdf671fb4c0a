package unwind

import (
	"encoding/binary"
	"fmt"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// The pointer encodings of .eh_frame (the LSB's DW_EH_PE_*): the low
// nibble is the value's format, the high one what it is relative to.
const (
	encAbsolute = 0x00 // an 8-byte address (this package reads 64-bit files only)
	encULEB128  = 0x01
	encUdata2   = 0x02
	encUdata4   = 0x03
	encUdata8   = 0x04
	encSLEB128  = 0x09
	encSdata2   = 0x0a
	encSdata4   = 0x0b
	encSdata8   = 0x0c
	encPCRel    = 0x10
	encOmit     = 0xff
)

// locationDecoder reads DW_CFA_set_loc's operand in one FDE: an address
// in its CIE's pointer encoding (the augmentation's 'R'), relative to the
// operand's own address when pc-relative. delve decodes that encoding for
// the FDE's range but keeps it to itself, so it is read again here from
// the CIE's header, only for the rare FDE that has the instruction.
type locationDecoder struct {
	enc byte
	// instrAddr is the address the FDE's instructions are loaded at, for
	// pc-relative operands.
	instrAddr uint64
}

// newLocationDecoder finds the encoding of fde's CIE in data, the section
// (an .eh_frame loaded at ehFrameAddr, or a .debug_frame when that is 0).
func newLocationDecoder(data []byte, fde *frame.FrameDescriptionEntry, ehFrameAddr uint64) (*locationDecoder, error) {
	instrAt := sectionOffset(data, fde.Instructions)
	d := &locationDecoder{enc: encAbsolute, instrAddr: ehFrameAddr + uint64(instrAt)}
	if ehFrameAddr == 0 {
		return d, nil // .debug_frame: addresses are absolute
	}
	// The FDE is its length, the CIE pointer, then Length bytes (delve's
	// Length counts from after the pointer), ending where its
	// instructions end.
	fdeAt := instrAt + len(fde.Instructions) - 8 - int(fde.Length)
	if fdeAt < 0 || fdeAt+8 > len(data) {
		return nil, fmt.Errorf("find the FDE's header before %#x", instrAt)
	}
	cieAt := fdeAt + 4 - int(binary.LittleEndian.Uint32(data[fdeAt+4:]))
	if cieAt < 0 || cieAt+8 > len(data) {
		return nil, fmt.Errorf("find the CIE of the FDE at %#x", fdeAt)
	}
	c := cursor{code: data, pos: cieAt + 8}
	enc, err := cieAddressEncoding(&c, fde.CIE.Augmentation)
	if err != nil {
		return nil, fmt.Errorf("read the CIE at %#x: %w", cieAt, err)
	}
	d.enc = enc
	return d, nil
}

// cieAddressEncoding reads a CIE's header from its version byte on and
// returns its 'R' pointer encoding (absolute without one).
func cieAddressEncoding(c *cursor, augmentation string) (byte, error) {
	version, err := c.byte()
	if err != nil {
		return 0, err
	}
	c.pos += len(augmentation) + 1 // delve has read it: the string and its NUL
	if _, err := c.uleb(); err != nil {
		return 0, err
	}
	if _, err := c.sleb(); err != nil {
		return 0, err
	}
	if version == 1 {
		_, err = c.byte()
	} else {
		_, err = c.uleb()
	}
	if err != nil || len(augmentation) == 0 || augmentation[0] != 'z' {
		return encAbsolute, err
	}
	if _, err := c.uleb(); err != nil { // the augmentation data's length
		return 0, err
	}
	for _, a := range augmentation[1:] {
		switch a {
		case 'L':
			if _, err := c.byte(); err != nil {
				return 0, err
			}
		case 'P':
			enc, err := c.byte()
			if err != nil {
				return 0, err
			}
			if _, err := readEncoded(c, enc&^0x80, 0); err != nil { // 0x80: indirect, same size
				return 0, fmt.Errorf("personality pointer: %w", err)
			}
		case 'R':
			return c.byte()
		case 'S', 'B':
		default:
			return 0, fmt.Errorf("unknown augmentation %q", a)
		}
	}
	return encAbsolute, nil
}

// readEncoded reads a value in pointer encoding enc; a pc-relative one is
// made absolute with at, the address of the value's first byte.
func readEncoded(c *cursor, enc byte, at uint64) (uint64, error) {
	var v uint64
	var err error
	switch enc & 0x0f {
	case encAbsolute, encUdata8, encSdata8:
		v, err = c.fixed(8)
	case encUdata4:
		v, err = c.fixed(4)
	case encSdata4:
		v, err = c.fixed(4)
		v = uint64(int64(int32(v)))
	case encUdata2:
		v, err = c.fixed(2)
	case encSdata2:
		v, err = c.fixed(2)
		v = uint64(int64(int16(v)))
	case encULEB128:
		v, err = c.uleb()
	case encSLEB128:
		var s int64
		s, err = c.sleb()
		v = uint64(s)
	default:
		return 0, fmt.Errorf("unknown pointer encoding %#02x", enc)
	}
	if err != nil {
		return 0, err
	}
	switch enc & 0x70 {
	case 0:
	case encPCRel:
		v += at
	default:
		return 0, fmt.Errorf("pointer encoding %#02x: only absolute and pc-relative addresses are supported", enc)
	}
	return v, nil
}

// decode reads the operand at c's position in the FDE's instructions.
func (d *locationDecoder) decode(c *cursor) (uint64, error) {
	if d.enc == encOmit || d.enc&0x80 != 0 {
		return 0, fmt.Errorf("pointer encoding %#02x cannot give an address", d.enc)
	}
	return readEncoded(c, d.enc, d.instrAddr+uint64(c.pos))
}
