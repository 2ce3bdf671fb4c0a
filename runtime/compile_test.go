package runtime

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gotrace/gotrace/internal/fixture"
	"github.com/gotrace/gotrace/internal/settings"
	"github.com/gotrace/gotrace/lang"
)

// TestCompile compiles a script against the fixture without loading
// anything: the spec has one attachment per matched probe (net:nope, which
// does not exist, is ignored as asked).
func TestCompile(t *testing.T) {
	bin := fixture.Build(t, "bitcoind")
	p, err := lang.Parse("test.bt", fmt.Sprintf(`usdt:%[1]s:net:*bound_message { @[probe] = count(); } usdt:%[1]s:net:nope { } BEGIN { }`, bin))
	if err != nil {
		t.Fatal(err)
	}
	info, err := lang.Analyze(p, lang.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := Compile(p, info, Options{Values: settings.Values{MissingProbes: settings.MissingIgnore}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range spec.Attachments {
		got = append(got, a.ProbeName)
	}
	slices.Sort(got)
	want := []string{"BEGIN", "usdt:" + bin + ":net:inbound_message", "usdt:" + bin + ":net:outbound_message"}
	if !slices.Equal(got, want) {
		t.Errorf("attachments %q, want %q", got, want)
	}
}
