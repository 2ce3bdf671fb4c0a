package runtime

import (
	"fmt"
	"strings"
	"time"
)

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
		switch format[i] {
		case '%':
			b.WriteByte('%')
		case 'a':
			b.WriteString(tm.Format("Mon"))
		case 'A':
			b.WriteString(tm.Format("Monday"))
		case 'b', 'h':
			b.WriteString(tm.Format("Jan"))
		case 'B':
			b.WriteString(tm.Format("January"))
		case 'c':
			b.WriteString(tm.Format("Mon Jan _2 15:04:05 2006"))
		case 'd':
			fmt.Fprintf(&b, "%02d", tm.Day())
		case 'e':
			fmt.Fprintf(&b, "%2d", tm.Day())
		case 'D':
			b.WriteString(tm.Format("01/02/06"))
		case 'F':
			b.WriteString(tm.Format("2006-01-02"))
		case 'H':
			fmt.Fprintf(&b, "%02d", tm.Hour())
		case 'I':
			fmt.Fprintf(&b, "%02d", (tm.Hour()+11)%12+1)
		case 'j':
			fmt.Fprintf(&b, "%03d", tm.YearDay())
		case 'm':
			fmt.Fprintf(&b, "%02d", int(tm.Month()))
		case 'M':
			fmt.Fprintf(&b, "%02d", tm.Minute())
		case 'n':
			b.WriteByte('\n')
		case 'p':
			b.WriteString(tm.Format("PM"))
		case 'r':
			b.WriteString(tm.Format("03:04:05 PM"))
		case 'R':
			b.WriteString(tm.Format("15:04"))
		case 's':
			fmt.Fprintf(&b, "%d", tm.Unix())
		case 'S':
			fmt.Fprintf(&b, "%02d", tm.Second())
		case 't':
			b.WriteByte('\t')
		case 'T', 'X':
			b.WriteString(tm.Format("15:04:05"))
		case 'x':
			b.WriteString(tm.Format("01/02/06"))
		case 'y':
			fmt.Fprintf(&b, "%02d", tm.Year()%100)
		case 'Y':
			fmt.Fprintf(&b, "%d", tm.Year())
		case 'z':
			b.WriteString(tm.Format("-0700"))
		case 'Z':
			b.WriteString(tm.Format("MST"))
		case 'f':
			fmt.Fprintf(&b, "%06d", tm.Nanosecond()/1000)
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
