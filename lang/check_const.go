package lang

// This file evaluates constant expressions, integer literals and
// positional parameters, and records their values in the Info.

import (
	"errors"
	"go/constant"
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

// constValue evaluates e, whose operands are checked, when it is a
// constant: an integer literal, a positional parameter used as a number
// ($# and a missing $N too) or a negated constant. It returns nil for
// anything else.
func (c *checker) constValue(e Expr) constant.Value {
	switch e := e.(type) {
	case *IntLit:
		return constant.MakeInt64(int64(e.Value))
	case *Unary:
		if v, ok := c.info.ConstInt(e.X); ok && e.Op == "-" {
			return constant.MakeInt64(-v)
		}
	case *Call:
		switch e.ID {
		case FuncKaddr:
			return c.kernelAddr(e)
		case FuncCgroupid:
			return c.cgroupID(e)
		case FuncPton:
			if b, ok := ptonAddress(e); ok {
				return constant.MakeString(string(b))
			}
		}
	case *PositionalParam:
		if e.Count {
			return constant.MakeInt64(int64(len(c.cfg.Params)))
		}
		v, ok := c.paramValue(e.N)
		if !ok {
			return constant.MakeInt64(0)
		}
		if n, err := parseParamInt(v); err == nil {
			return constant.MakeInt64(n)
		}
	}
	return nil
}
