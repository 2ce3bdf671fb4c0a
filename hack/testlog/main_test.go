package main

import (
	"strings"
	"testing"
)

// TestRun feeds go test -json events through run: package lines and a
// failed test's output are printed, a passing test's are not, and a
// skipped test is listed with its reason.
func TestRun(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: quiet\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: this machine lacks hardware breakpoints\n"}`,
		`{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}`,
		`{"Action":"skip","Package":"p","Test":"TestB"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"    c_test.go:1: wrong\n"}`,
		`{"Action":"output","Package":"p","Test":"TestC","Output":"--- FAIL: TestC (0.00s)\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestC"}`,
		`{"Action":"output","Package":"p","Output":"FAIL\tp\t0.1s\n"}`,
		`# p [build failed]`,
		`{"ImportPath":"q","Action":"build-output","Output":"q/x.go:1:1: syntax error\n"}`,
	}, "\n")
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := "    c_test.go:1: wrong\n--- FAIL: TestC (0.00s)\nFAIL\tp\t0.1s\n# p [build failed]\nq/x.go:1:1: syntax error\n\nskipped tests: 1\n  p TestB: b_test.go:9: this machine lacks hardware breakpoints\n"
	if out.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", out.String(), want)
	}
}
