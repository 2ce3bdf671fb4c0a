package svg

import "testing"

// TestEscape checks the characters XML gives a meaning to and those it
// cannot hold.
func TestEscape(t *testing.T) {
	tests := []struct{ in, want string }{
		{"main", "main"},
		{`a<b>&"c"`, "a&lt;b&gt;&amp;&quot;c&quot;"},
		{"tab\there", "tab?here"},
		{"bad\xffutf8", "bad?utf8"},
		{"ünï", "ünï"},
	}
	for _, tt := range tests {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCoord checks that coordinates are written short.
func TestCoord(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{{10, "10"}, {2.5, "2.5"}, {3.14159, "3.14"}, {0.001, "0"}, {-1.5, "-1.5"}}
	for _, tt := range tests {
		if got := Coord(tt.in); got != tt.want {
			t.Errorf("Coord(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
