package layout

import "testing"

func TestLhistBuckets(t *testing.T) {
	for _, tc := range []struct {
		l    Lhist
		want int64
	}{
		{Lhist{Min: 0, Max: 100, Step: 10}, 12},
		{Lhist{Min: 0, Max: 10, Step: 3}, 5}, // the last step is cut at Max
		{Lhist{Min: -5, Max: 5, Step: 5}, 4},
		{Lhist{Min: 0, Max: 100, Step: 0}, 0},
		{Lhist{Min: 0, Max: 100, Step: -1}, 0},
		{Lhist{Min: 5, Max: 5, Step: 1}, 0},
	} {
		if got := tc.l.Buckets(); got != tc.want {
			t.Errorf("%+v.Buckets() = %d, want %d", tc.l, got, tc.want)
		}
	}
}

// TestCursor finds the fields of records with packed strings, including
// records cut short, where a packed string is empty or ends at the data.
func TestCursor(t *testing.T) {
	fields := []Field{
		{Kind: String, Offset: 8, Size: 64, Packed: true},
		{Kind: Int, Offset: 0, Size: 8},
		{Kind: String, Offset: 8, Size: 4, Packed: true},
		{Kind: String, Offset: 8, Size: 64, Packed: true},
	}
	for _, tc := range []struct {
		name string
		data string
		want []string
	}{
		{"short strings", "12345678ab\x00cd\x00ef\x00", []string{"ab", "12345678ab\x00cd\x00ef\x00", "cd", "ef"}},
		{"empty strings", "12345678\x00\x00\x00", []string{"", "12345678\x00\x00\x00", "", ""}},
		{"longer than its buffer", "12345678a\x00abcdef\x00g\x00", []string{"a", "12345678a\x00abcdef\x00g\x00", "abcd", "g"}},
		{"no NUL at the end", "12345678a\x00b\x00cde", []string{"a", "12345678a\x00b\x00cde", "b", "cde"}},
		{"cut short", "12345678a\x00", []string{"a", "12345678a\x00", "", ""}},
	} {
		var c Cursor
		for i, f := range fields {
			if got := string(c.Field(f, []byte(tc.data))); got != tc.want[i] {
				t.Errorf("%s: field %d = %q, want %q", tc.name, i, got, tc.want[i])
			}
		}
	}
}

// TestCursorPackedBuf finds a packed buf between packed strings: its
// length word at any alignment and that many bytes, no more than its
// capacity; nil when the record ends before them.
func TestCursorPackedBuf(t *testing.T) {
	fields := []Field{
		{Kind: String, Offset: 0, Size: 64, Packed: true},
		{Kind: Buf, Offset: 0, Size: 8 + 2048, Packed: true},
		{Kind: String, Offset: 0, Size: 64, Packed: true},
	}
	buf := "\x03\x00\x00\x00\x00\x00\x00\x00xyz"
	zeros := "\x00\x00\x00\x00\x00\x00\x00\x00"
	for _, tc := range []struct {
		name string
		data string
		want []string
	}{
		{"whole", "ab\x00" + buf + "cd\x00", []string{"ab", buf, "cd"}},
		{"empty buf", "\x00" + zeros + "cd\x00", []string{"", zeros, "cd"}},
		{"cut in the data", "ab\x00" + buf[:10], []string{"ab", "", ""}},
		{"cut in the length", "ab\x00\x03\x00", []string{"ab", "", ""}},
	} {
		var c Cursor
		for i, f := range fields {
			got := c.Field(f, []byte(tc.data))
			if string(got) != tc.want[i] || (tc.want[i] == "" && f.Kind == Buf && got != nil) {
				t.Errorf("%s: field %d = %q, want %q", tc.name, i, got, tc.want[i])
			}
		}
	}
}

// TestHistBucketsOf checks the bucket counts of hist(v, bits): bits 0 is
// hist(v)'s 66, and the top bucket of each holds values up to 2^64-1.
func TestHistBucketsOf(t *testing.T) {
	if got := HistBucketsOf(0); got != HistBuckets {
		t.Errorf("HistBucketsOf(0) = %d, want HistBuckets (%d)", got, HistBuckets)
	}
	for bits, want := range []int64{66, 129, 253, 497, 977, 1921} {
		if got := HistBucketsOf(bits); got != want {
			t.Errorf("HistBucketsOf(%d) = %d, want %d", bits, got, want)
		}
	}
}
