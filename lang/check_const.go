package lang

// This file evaluates constant integer expressions: literals and
// positional parameters.

import (
	"errors"
	"strconv"
	"strings"
)

// badParam reports whether e is a positional parameter given a value that
// is not a number, where a constant integer is needed; it reports that as
// bpftrace 0.17 does in such places.
func (c *checker) badParam(e Expr) bool {
	p, ok := e.(*PositionalParam)
	if !ok || p.Count {
		return false
	}
	v, given := c.paramValue(p.N)
	if !given {
		return false
	}
	if _, err := parseParamInt(v); err == nil {
		return false
	}
	c.errorf(p.Loc, "$%d used numerically but given %q", p.N, v)
	return true
}

// parseParamInt reads a positional parameter used as a number: decimal,
// 0x hex or 0 octal, as bpftrace 0.17 accepts them.
func parseParamInt(s string) (int64, error) {
	if strings.ContainsAny(s, "_oObB") {
		return 0, errors.New("not a number")
	}
	return strconv.ParseInt(s, 0, 64)
}

// constInt returns the value of a constant integer expression: a literal,
// a negated literal or a positional parameter.
func (c *checker) constInt(e Expr) (int64, bool) {
	switch e := e.(type) {
	case *IntLit:
		return int64(e.Value), true
	case *Unary:
		if e.Op == "-" {
			if v, ok := c.constInt(e.X); ok {
				return -v, true
			}
		}
	case *PositionalParam:
		if e.Count {
			return int64(len(c.cfg.Params)), true
		}
		v, ok := c.paramValue(e.N)
		if !ok {
			return 0, true
		}
		n, err := parseParamInt(v)
		return n, err == nil
	}
	return 0, false
}
