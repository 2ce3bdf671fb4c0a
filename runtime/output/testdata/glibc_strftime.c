// glibc_strftime formats instants with the C library's strftime, for
// TestStrftimeGlibc. Each input line is "SECONDS ZONE FORMAT" (the
// format is the rest of the line, with \n written as \\n); each output
// is "LENGTH:" followed by that many bytes of the result and a newline.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(void) {
	static char line[8192], format[8192], out[65536];
	char zone[256];
	long long seconds;
	int used;
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%lld %255s %n", &seconds, zone, &used) != 2) {
			return 2;
		}
		// Unescape \\n and \\\\ in the format.
		char *f = format;
		for (char *s = line + used; *s; s++) {
			if (s[0] == '\\' && s[1] == 'n') {
				*f++ = '\n';
				s++;
			} else if (s[0] == '\\' && s[1] == '\\') {
				*f++ = '\\';
				s++;
			} else {
				*f++ = *s;
			}
		}
		*f = 0;
		setenv("TZ", zone, 1);
		tzset();
		time_t t = (time_t)seconds;
		struct tm tm;
		localtime_r(&t, &tm);
		size_t n = strftime(out, sizeof out, format, &tm);
		printf("%zu:", n);
		fwrite(out, 1, n, stdout);
		putchar('\n');
	}
	return 0;
}
