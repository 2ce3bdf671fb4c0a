package runtime

import (
	"fmt"
	"strings"
	"time"
)

// strftimeLayouts are the conversions that a Go time layout spells.
var strftimeLayouts = map[byte]string{
	'a': "Mon", 'A': "Monday", 'b': "Jan", 'h': "Jan", 'B': "January",
	'c': "Mon Jan _2 15:04:05 2006", 'd': "02", 'e': "_2", 'D': "01/02/06",
	'F': "2006-01-02", 'H': "15", 'I': "03", 'j': "002", 'm': "01", 'M': "04",
	'p': "PM", 'r': "03:04:05 PM", 'R': "15:04", 'S': "05", 'T': "15:04:05",
	'X': "15:04:05", 'x': "01/02/06", 'z': "-0700", 'Z': "MST",
}

// strftime formats tm like C's strftime in the local time zone, for time()
// and strftime(). It knows the conversions scripts use, and bpftrace's %f
// (microseconds); an unknown conversion is printed as written.
func strftime(format string, tm time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		if layout, ok := strftimeLayouts[format[i]]; ok {
			b.WriteString(tm.Format(layout))
			continue
		}
		switch format[i] {
		case '%':
			b.WriteByte('%')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 's':
			fmt.Fprintf(&b, "%d", tm.Unix())
		case 'y':
			fmt.Fprintf(&b, "%02d", tm.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", tm.Year())
		case 'f':
			fmt.Fprintf(&b, "%06d", tm.Nanosecond()/1000)
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
