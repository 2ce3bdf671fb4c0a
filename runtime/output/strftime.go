package output

import (
	"strconv"
	"strings"
	"time"
)

// Strftime formats tm as the C library's strftime does in the C locale,
// in tm's zone, for time() and strftime(): every conversion of glibc's,
// with its flags (_ - 0 ^ #), field widths and E and O modifiers, plus
// bpftrace's %f (microseconds, six digits). A conversion glibc does not
// know is printed as written, as glibc prints it.
func Strftime(format string, tm time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			b.WriteByte(format[i])
			continue
		}
		spec, next := parseConversion(format, i)
		b.WriteString(spec.format(tm))
		i = next - 1
	}
	return b.String()
}

// conversion is one %... of a strftime format.
type conversion struct {
	// text is the conversion as written, from the % on, for one that is
	// printed as written.
	text string
	// pad is the last of the flags _ - 0 (0 for none); upper is ^,
	// swapCase is #.
	pad             byte
	upper, swapCase bool
	// width is the field width, -1 when none is given.
	width int
	// modifier is E, O or 0.
	modifier byte
	// verb is the conversion character, 0 when the format ends first.
	verb byte
}

// parseConversion reads the conversion that starts with the % at
// format[i]; next is the index after it.
func parseConversion(format string, i int) (c conversion, next int) {
	c.width = -1
	j := i + 1
	for ; j < len(format); j++ {
		switch format[j] {
		case '_', '-', '0':
			c.pad = format[j]
			continue
		case '^':
			c.upper = true
			continue
		case '#':
			c.swapCase = true
			continue
		}
		break
	}
	if j < len(format) && format[j] >= '0' && format[j] <= '9' {
		c.width = 0
		for ; j < len(format) && format[j] >= '0' && format[j] <= '9'; j++ {
			// glibc saturates a huge width; so does this, at a size no
			// one prints.
			c.width = min(c.width*10+int(format[j]-'0'), 1<<16)
		}
	}
	if j < len(format) && (format[j] == 'E' || format[j] == 'O') {
		c.modifier = format[j]
		j++
	}
	if j < len(format) {
		c.verb = format[j]
		j++
	}
	c.text = format[i:j]
	return c, j
}

// The conversions that glibc refuses the E or O modifier, printing them
// as written; on the others the modifier changes nothing in the C
// locale, which has no alternative forms.
const (
	refusesE = "aAbBdDeFgGhHIjklmMSUVwW"
	refusesO = "aAcDFxXY"
)

// subformats are the conversions that stand for a whole format.
var subformats = map[byte]string{
	'c': "%a %b %e %H:%M:%S %Y",
	'D': "%m/%d/%y", 'x': "%m/%d/%y",
	'F': "%Y-%m-%d",
	'r': "%I:%M:%S %p",
	'R': "%H:%M",
	'T': "%H:%M:%S", 'X': "%H:%M:%S",
}

// format prints one conversion of tm.
func (c conversion) format(tm time.Time) string {
	if c.modifier == 'E' && strings.IndexByte(refusesE, c.verb) >= 0 ||
		c.modifier == 'O' && strings.IndexByte(refusesO, c.verb) >= 0 {
		// glibc looks at # before it refuses %Eb and %Eh.
		c.upper = c.upper || c.swapCase && (c.verb == 'b' || c.verb == 'h')
		return c.asWritten()
	}
	switch c.verb {
	case 'a':
		return c.name(tm.Weekday().String()[:3], true)
	case 'A':
		return c.name(tm.Weekday().String(), true)
	case 'b', 'h':
		return c.name(tm.Month().String()[:3], true)
	case 'B':
		return c.name(tm.Month().String(), true)
	case 'p', 'P':
		s := "AM"
		if tm.Hour() >= 12 {
			s = "PM"
		}
		if c.verb == 'P' {
			// %P is lowercase whatever the flags say.
			return c.padText(strings.ToLower(s))
		}
		return c.name(s, false)
	case 'Z':
		zone, _ := tm.Zone()
		return c.name(zone, false)
	case 'C':
		return c.number(floorDiv(tm.Year(), 100), 2, false)
	case 'y':
		return c.number((tm.Year()%100+100)%100, 2, false)
	case 'Y':
		return c.number(tm.Year(), 4, false)
	case 'g':
		year, _ := tm.ISOWeek()
		return c.number((year%100+100)%100, 2, false)
	case 'G':
		year, _ := tm.ISOWeek()
		return c.number(year, 4, false)
	case 'V':
		_, week := tm.ISOWeek()
		return c.number(week, 2, false)
	case 'U':
		return c.number((tm.YearDay()-1-int(tm.Weekday())+7)/7, 2, false)
	case 'W':
		return c.number((tm.YearDay()-1-(int(tm.Weekday())+6)%7+7)/7, 2, false)
	case 'u':
		return c.number((int(tm.Weekday())+6)%7+1, 1, false)
	case 'w':
		return c.number(int(tm.Weekday()), 1, false)
	case 'd':
		return c.number(tm.Day(), 2, false)
	case 'e':
		return c.number(tm.Day(), 2, true)
	case 'j':
		return c.number(tm.YearDay(), 3, false)
	case 'm':
		return c.number(int(tm.Month()), 2, false)
	case 'H':
		return c.number(tm.Hour(), 2, false)
	case 'k':
		return c.number(tm.Hour(), 2, true)
	case 'I':
		return c.number(hour12(tm), 2, false)
	case 'l':
		return c.number(hour12(tm), 2, true)
	case 'M':
		return c.number(tm.Minute(), 2, false)
	case 'S':
		return c.number(tm.Second(), 2, false)
	case 's':
		return c.number64(tm.Unix(), 1, true, false)
	case 'z':
		_, offset := tm.Zone()
		minutes := offset / 60
		return c.number64(int64(minutes/60*100+minutes%60), 5, false, true)
	case 'n':
		return c.padText("\n")
	case 't':
		return c.padText("\t")
	case '%':
		return c.padText("%")
	case 'f':
		// bpftrace's microseconds, only as a bare %f.
		if c.text == "%f" {
			return strconv.Itoa(tm.Nanosecond()/1000 + 1000000)[1:]
		}
	}
	if sub, ok := subformats[c.verb]; ok {
		s := Strftime(sub, tm)
		if c.upper {
			s = strings.ToUpper(s)
		}
		return c.padText(s)
	}
	return c.asWritten()
}

// asWritten prints a conversion glibc does not know as written, upper
// case with the ^ flag, padded to its width.
func (c conversion) asWritten() string {
	if c.upper {
		return c.padText(strings.ToUpper(c.text))
	}
	return c.padText(c.text)
}

// name prints a name (a day, a month, AM or PM, a zone): ^ makes it
// upper case, and # upper case too for days and months (swapUpper) but
// lower case for the others.
func (c conversion) name(s string, swapUpper bool) string {
	switch {
	case c.swapCase && !swapUpper:
		s = strings.ToLower(s)
	case c.upper || c.swapCase:
		s = strings.ToUpper(s)
	}
	return c.padText(s)
}

// padText pads s on the left to the field width: with zeros for the 0
// flag, otherwise with spaces.
func (c conversion) padText(s string) string {
	fill := byte(' ')
	if c.pad == '0' {
		fill = '0'
	}
	return padLeft(s, c.width, fill)
}

// padLeft pads s on the left with fill to width bytes.
func padLeft(s string, width int, fill byte) string {
	if width <= len(s) {
		return s
	}
	return strings.Repeat(string(fill), width-len(s)) + s
}

// number prints n with at least digits digits, padded with zeros (or
// spaces, for spacePad conversions such as %e) unless a flag says
// otherwise.
func (c conversion) number(n, digits int, spacePad bool) string {
	return c.number64(int64(n), digits, spacePad, false)
}

// number64 is number for 64-bit values; sign prints + before a number
// that is not negative (%z). As in glibc, a sign takes one of the
// default digits, and with a field width it comes after width-1 blanks
// (zeros with the 0 flag) and before the number padded to the width.
func (c conversion) number64(n int64, digits int, spacePad, sign bool) string {
	fill := byte('0')
	if c.pad == '_' || c.pad == '-' || c.pad == 0 && spacePad {
		fill = ' '
	}
	prefix, lead := "", ""
	if n < 0 || sign {
		prefix = "+"
		if n < 0 {
			prefix = "-"
		}
		digits--
		if c.width > 0 {
			lead = padLeft("", c.width-1, ' ')
			if c.pad == '0' {
				lead = padLeft("", c.width-1, '0')
			}
		}
	}
	width := digits
	switch {
	case c.pad == '-' && c.width < 0:
		width = 0
	case c.pad == '-':
		width = c.width
	case c.width > digits:
		width = c.width
	}
	text := strconv.FormatUint(absUint(n), 10)
	return lead + prefix + padLeft(text, width, fill)
}

// absUint is |n|, also for the smallest int64.
func absUint(n int64) uint64 {
	if n < 0 {
		return uint64(-(n + 1)) + 1
	}
	return uint64(n)
}

// hour12 is the hour on a 12-hour clock, 1 to 12.
func hour12(tm time.Time) int {
	if h := tm.Hour() % 12; h != 0 {
		return h
	}
	return 12
}

// floorDiv divides rounding down, as glibc's %C does for years before 0.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
