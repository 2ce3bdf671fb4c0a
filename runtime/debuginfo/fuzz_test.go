package debuginfo

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzFuncParams reads damaged files as a uprobe's target: FuncParams,
// the -lv lines and the struct lookup return an error or nothing, and never panic or loop, on
// any ELF file and any DWARF in it (a type that is its own typedef, say).
func FuzzFuncParams(f *testing.F) {
	bin, err := os.ReadFile(buildWithDebugInfo(f, "-g"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(bin, "structs")
	f.Add(bin, "basic")
	f.Add([]byte("\x7fELF"), "main")
	// One file a fuzzing process rewrites: a directory per input costs
	// more than reading it.
	path := filepath.Join(f.TempDir(), "target")
	f.Fuzz(func(t *testing.T, data []byte, function string) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if rec, _, err := new(Files).FuncParams(path, function); err == nil && rec == nil {
			t.Fatal("no record and no error")
		}
		new(Files).ParamLines(path, function)
		new(Files).Structs(path, function)
	})
}
