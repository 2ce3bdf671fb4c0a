// Package settings declares every setting of a trace once: the config
// block key that names it (bpftrace's short name), the environment
// variables that set it (bpftrace's names), the flag where it has one, its
// default and its bounds. Resolve reads them in one order for all: the
// flag, then the environment, then the script's config block, then the
// default. The front end (lang.Config), the code generator
// (codegen.Options) and the runtime (runtime.Options) each embed the one
// Values that results, so no setting is copied from struct to struct.
//
// It owns the settings' names, defaults, precedence and validation; it
// reads no file and knows nothing of the script but its config block's
// keys and values.
package settings

import (
	"fmt"
	"strconv"
	"strings"
)

// The defaults, bpftrace 0.17's.
const (
	DefaultStrLen      = 64
	DefaultMapKeysMax  = 4096
	DefaultCatBytesMax = 10 * 1024
)

// MaxStrLen bounds StrLen and BufLen: 4,000,000 bytes, Bitcoin Core's
// largest P2P message (MAX_PROTOCOL_MESSAGE_LENGTH), so that str() and
// buf() hold whole messages. bpftrace 0.17 stops at 200 because its
// strings live on the 512-byte BPF stack; gotrace keeps values in scratch
// maps (an entry per CPU above 32 KiB), and a record of one such value
// still fits the 4 MiB a map value holds.
const MaxStrLen = 4_000_000

// Values are the settings of one trace.
type Values struct {
	// StrLen is the size of str()'s buffer (max_strlen,
	// BPFTRACE_MAX_STRLEN, BPFTRACE_STRLEN); 0 means DefaultStrLen.
	StrLen int
	// BufLen is the most data buf() holds (max_buflen, gotrace's own); 0
	// means StrLen, as in bpftrace. It lets a script take whole messages
	// in bufs while its strings keep a small size.
	BufLen int
	// MapKeysMax is the number of keys a map holds (max_map_keys,
	// BPFTRACE_MAP_KEYS_MAX); 0 means DefaultMapKeysMax.
	MapKeysMax int
	// CatBytesMax is how much of a file cat() prints (max_cat_bytes,
	// BPFTRACE_MAX_CAT_BYTES, 0.17's BPFTRACE_CAT_BYTES_MAX); 0 means
	// DefaultCatBytesMax.
	CatBytesMax int
	// NoCppDemangle prints C++ symbols as the files hold them, mangled
	// (cpp_demangle = 0, BPFTRACE_NO_CPP_DEMANGLE=1).
	NoCppDemangle bool
	// PerfRBPages is the size of the ring buffer for printf-like records
	// in 4 KiB pages, rounded up to a power of two (perf_rb_pages,
	// BPFTRACE_PERF_RB_PAGES); 0 means 4096 pages (16 MiB).
	PerfRBPages int
	// MissingProbes is what a probe that does not exist does to the run
	// (missing_probes, BPFTRACE_MISSING_PROBES, --missing-probes).
	MissingProbes MissingProbes
	// TimeMap names a key-less map of unsigned integers whose value
	// tseries() takes as the time instead of the clock's: bpftrace's
	// BPFTRACE_DUMMY_TS_MAP, with which its tests control the intervals.
	TimeMap string
	// StackUnwind is how ustack walks user stacks (stack_unwind,
	// BPFTRACE_STACK_UNWIND, gotrace's own): frame pointers as bpftrace
	// does, the default, or .eh_frame rules.
	StackUnwind StackUnwind
}

// Setting is one setting's declaration.
type Setting struct {
	// Key is its config block key.
	Key string
	// Env are the environment variables that set it, the first set one
	// winning.
	Env []string
	// Flag is its command-line flag, if it has one.
	Flag string
	// set reads a value into v.
	set func(v *Values, text string) error
}

// All are the settings gotrace acts on, in the order Resolve reads them.
var All = []Setting{
	{Key: "max_strlen", Env: []string{"BPFTRACE_MAX_STRLEN", "BPFTRACE_STRLEN"}, set: size(func(v *Values) *int { return &v.StrLen }, "string size")},
	{Key: "max_buflen", set: size(func(v *Values) *int { return &v.BufLen }, "buf size")},
	{Key: "max_map_keys", Env: []string{"BPFTRACE_MAP_KEYS_MAX"}, set: positive(func(v *Values) *int { return &v.MapKeysMax })},
	{Key: "max_cat_bytes", Env: []string{"BPFTRACE_MAX_CAT_BYTES", "BPFTRACE_CAT_BYTES_MAX"}, set: positive(func(v *Values) *int { return &v.CatBytesMax })},
	{Key: "perf_rb_pages", Env: []string{"BPFTRACE_PERF_RB_PAGES"}, set: positive(func(v *Values) *int { return &v.PerfRBPages })},
	{Key: "missing_probes", Env: []string{"BPFTRACE_MISSING_PROBES"}, Flag: "--missing-probes", set: func(v *Values, s string) error {
		m, err := ParseMissingProbes(s)
		v.MissingProbes = m
		return err
	}},
	{Key: "stack_unwind", Env: []string{"BPFTRACE_STACK_UNWIND"}, set: func(v *Values, s string) error {
		u, err := ParseStackUnwind(s)
		v.StackUnwind = u
		return err
	}},
	// Two settings of one value, the variable saying the opposite of the
	// key: the variable's, read after the key's, wins where it is set.
	{Key: "cpp_demangle", set: boolean(func(v *Values, b bool) { v.NoCppDemangle = !b })},
	{Env: []string{"BPFTRACE_NO_CPP_DEMANGLE"}, set: boolean(func(v *Values, b bool) { v.NoCppDemangle = b })},
	{Env: []string{"BPFTRACE_DUMMY_TS_MAP"}, set: func(v *Values, s string) error {
		v.TimeMap = s
		return nil
	}},
}

// errIgnored is returned by a setting's parser for a value that is taken
// as not given: a size that is not a positive number, as bpftrace reads
// its environment.
var errIgnored = fmt.Errorf("not a positive number")

// positive reads a positive integer into the field field returns; any
// other value is ignored, as bpftrace ignores it.
func positive(field func(*Values) *int) func(*Values, string) error {
	return func(v *Values, s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return errIgnored
		}
		*field(v) = n
		return nil
	}
}

// boolean reads 1 or 0 (true or false) and hands it to set; anything
// else is an error, as bpftrace refuses it.
func boolean(set func(*Values, bool)) func(*Values, string) error {
	return func(v *Values, s string) error {
		switch s {
		case "1", "true":
			set(v, true)
		case "0", "false":
			set(v, false)
		default:
			return fmt.Errorf("%q is not a valid value (0 or 1)", s)
		}
		return nil
	}
}

// size reads a positive size of at most MaxStrLen bytes: a larger one is
// an error, for sizes are never cut silently to less than asked.
func size(field func(*Values) *int, what string) func(*Values, string) error {
	read := positive(field)
	return func(v *Values, s string) error {
		if err := read(v, s); err != nil {
			return err
		}
		if n := *field(v); n > MaxStrLen {
			return &tooLargeError{n: n, what: what}
		}
		return nil
	}
}

// tooLargeError is a size over MaxStrLen; Error words it for its source.
type tooLargeError struct {
	n    int
	what string
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%d exceeds the maximum %s of %d bytes", e.n, e.what, MaxStrLen)
}

// ConfigEntry is one `key = value` of a script's config block, as the
// caller read it: Key is the short name in lower case.
type ConfigEntry struct {
	Key, Value string
}

// Sources are where Resolve reads the settings from.
type Sources struct {
	// Flags are the values given on the command line, by flag name.
	Flags map[string]string
	// Env looks an environment variable up (os.LookupEnv).
	Env func(string) (string, bool)
	// Config is the script's config block, in order: a later entry of a
	// key wins over an earlier one.
	Config []ConfigEntry
}

// Error is a setting whose value is wrong: Source says where it came from
// ("--missing-probes", "BPFTRACE_STRLEN", or "config" with Entry the index
// of the config block entry, for the caller to place it).
type Error struct {
	Key    string
	Source string
	Entry  int
	Err    error
}

func (e *Error) Error() string {
	big, ok := e.Err.(*tooLargeError)
	switch {
	case ok && e.Source == "config":
		// Placed at the entry, which names the size.
		return fmt.Sprintf("%s %d exceeds the maximum of %d bytes", e.Key, big.n, MaxStrLen)
	case ok || strings.HasPrefix(e.Source, "BPFTRACE_"):
		// A size from anywhere but the config block, and any value from
		// an environment variable, which the message must name: nothing
		// else points the user at it.
		return fmt.Sprintf("read %s: %v", e.Source, e.Err)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Resolve reads every setting of All from src, each from the first source
// that gives it (flag, environment, config block), and returns the
// settings with the defaults for the rest. A value that is not a positive
// number where one is expected is taken as not given, as bpftrace takes
// it; other bad values are an *Error.
func Resolve(src Sources) (Values, error) {
	v := Values{StrLen: DefaultStrLen, MapKeysMax: DefaultMapKeysMax}
	for _, s := range All {
		if err := s.resolve(&v, src); err != nil {
			return v, err
		}
	}
	return v, nil
}

// resolve reads s from the first source that gives it.
func (s Setting) resolve(v *Values, src Sources) error {
	if text, ok := src.Flags[s.Flag]; ok && s.Flag != "" {
		if err := s.set(v, text); err != nil && err != errIgnored {
			return &Error{Key: s.Key, Source: s.Flag, Err: err}
		}
		return nil
	}
	// A variable that is set keeps the config block from setting s, even
	// where its value is ignored.
	envSet := false
	for _, name := range s.Env {
		text, ok := src.Env(name)
		if !ok || text == "" {
			continue
		}
		envSet = true
		err := s.set(v, text)
		if err == errIgnored {
			continue
		}
		if err != nil {
			return &Error{Key: s.Key, Source: name, Err: err}
		}
		return nil
	}
	if s.Key == "" || envSet {
		return nil
	}
	for i := len(src.Config) - 1; i >= 0; i-- {
		if src.Config[i].Key != s.Key {
			continue
		}
		if err := s.set(v, src.Config[i].Value); err != nil && err != errIgnored {
			return &Error{Key: s.Key, Source: "config", Entry: i, Err: err}
		}
		return nil
	}
	return nil
}
