package vmtest

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// An Entry is one member of an initramfs: a file, a directory, a symbolic
// link or a character device.
type Entry struct {
	// Path is the member's path in the guest, absolute ("/bin/busybox").
	Path string
	// Mode is the member's type and permission bits (fs.ModeDir,
	// fs.ModeSymlink, fs.ModeCharDevice | fs.ModeDevice, or none for a
	// regular file).
	Mode fs.FileMode
	// Data is a regular file's contents or a symbolic link's target.
	Data []byte
	// Major and Minor are a device's numbers.
	Major, Minor uint32
}

// cpio's "new ASCII" (newc) format, the one the kernel unpacks as an
// initramfs: a 110-byte header of hexadecimal fields, the name with its
// NUL, padding to 4 bytes, the data, padding to 4 bytes; the archive ends
// with a member called TRAILER!!!.
const (
	newcMagic   = "070701"
	newcTrailer = "TRAILER!!!"
	// The mode's type bits as stat(2) has them.
	sIFREG = 0o100000
	sIFDIR = 0o040000
	sIFLNK = 0o120000
	sIFCHR = 0o020000
)

// WriteCPIO writes entries to w as a newc cpio archive, the format of an
// initramfs. The parent directories of every entry are added where the
// entries do not list them, and every directory comes before what it
// holds, so the kernel can create each member as it reads it.
func WriteCPIO(w io.Writer, entries []Entry) error {
	all := map[string]Entry{}
	for _, e := range entries {
		p := path.Clean("/" + e.Path)
		if p == "/" {
			return fmt.Errorf("write initramfs: entry %q names the root", e.Path)
		}
		if _, dup := all[p]; dup {
			return fmt.Errorf("write initramfs: %s is listed twice", p)
		}
		e.Path = p
		all[p] = e
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			if _, ok := all[d]; !ok {
				all[d] = Entry{Path: d, Mode: fs.ModeDir | 0o755}
			}
		}
	}
	paths := make([]string, 0, len(all))
	for p := range all {
		paths = append(paths, p)
	}
	// A parent sorts before its children because it is their prefix.
	sort.Strings(paths)
	bw := bufio.NewWriter(w)
	for i, p := range paths {
		if err := writeMember(bw, uint32(i+1), all[p]); err != nil {
			return err
		}
	}
	if err := writeHeader(bw, newcTrailer, 0, 0, 0, 0, 0, 0); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write initramfs: %w", err)
	}
	return nil
}

// writeMember writes one entry's header and data.
func writeMember(w *bufio.Writer, ino uint32, e Entry) error {
	mode := uint32(e.Mode.Perm())
	if e.Mode&fs.ModeSticky != 0 {
		mode |= 0o1000 // /tmp's, which every user may write
	}
	var data []byte
	switch {
	case e.Mode&fs.ModeDir != 0:
		mode |= sIFDIR
	case e.Mode&fs.ModeSymlink != 0:
		mode |= sIFLNK
		data = e.Data
	case e.Mode&fs.ModeCharDevice != 0:
		mode |= sIFCHR
	case e.Mode.Type() == 0:
		mode |= sIFREG
		data = e.Data
	default:
		return fmt.Errorf("write initramfs: %s: mode %v is not a file, directory, link or character device", e.Path, e.Mode)
	}
	name := strings.TrimPrefix(e.Path, "/")
	if err := writeHeader(w, name, ino, mode, uint32(len(data)), e.Major, e.Minor, 1); err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write initramfs: %w", err)
	}
	return pad4(w, len(data))
}

// writeHeader writes a newc header and the name after it, padded.
func writeHeader(w *bufio.Writer, name string, ino, mode, size, rmajor, rminor, nlink uint32) error {
	// Fields: magic, ino, mode, uid, gid, nlink, mtime, filesize,
	// devmajor, devminor, rdevmajor, rdevminor, namesize, check.
	_, err := fmt.Fprintf(w, "%s%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%s\x00",
		newcMagic, ino, mode, 0, 0, nlink, 0, size, 0, 0, rmajor, rminor, len(name)+1, 0, name)
	if err != nil {
		return fmt.Errorf("write initramfs: %w", err)
	}
	return pad4(w, 110+len(name)+1)
}

// pad4 writes the zero bytes that bring n written bytes to a multiple of 4.
func pad4(w *bufio.Writer, n int) error {
	if r := n % 4; r != 0 {
		if _, err := w.Write(make([]byte, 4-r)); err != nil {
			return fmt.Errorf("write initramfs: %w", err)
		}
	}
	return nil
}
