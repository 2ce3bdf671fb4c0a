package lang

import "testing"

func TestExpandParams(t *testing.T) {
	params := []string{"/usr/bin/python3.11", "python"}
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"$1", "/usr/bin/python3.11", false},
		{"usdt:$1:$2:x", "usdt:/usr/bin/python3.11:python:x", false},
		{"no params", "no params", false},
		{"cost$", "cost$", false},
		{"$3", "", true},
		{"$0", "", true},
	} {
		got, err := expandParams(tc.in, params)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("expandParams(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}
