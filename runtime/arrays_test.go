package runtime

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/gotrace/gotrace/internal/testenv"
)

// nicSource passes a struct with a MAC address in a byte array and one
// in a char array, and 12 bytes that hold another (and, read as a struct
// nic, one with bytes over 127 in its member mac), to seen().
const nicSource = `struct nic { int id; unsigned char mac[6]; char name[6]; };
__attribute__((noinline)) void seen(struct nic *n, unsigned char *peer)
{
	__asm__ volatile("" : : "r"(n), "r"(peer) : "memory");
}
int main(void)
{
	struct nic n = {7, {0x00, 0x1c, 0x42, 0x35, 0x20, 0x09}, {0x02, 0x00, 0x5e, 0x10, 0x00, 0x01}};
	unsigned char peer[12] = {0xde, 0xad, 0xbe, 0xef, 0xb5, 0x0a, 0x0b, 0xff, 0xee, 0x01};
	seen(&n, peer);
	return 0;
}
`

// nicScript declares struct nic as nicSource does.
const nicScript = `struct nic { int id; unsigned char mac[6]; char name[6]; }
`

// TestRunMacaddr formats MAC addresses read from an array member, from
// a char array member (which holds a 0 byte, and is a string to the
// language), through a pointer and at a struct's address, in printf, as
// a map key and as a map value, as bpftrace 0.17 does.
func TestRunMacaddr(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "nic", nicSource)
	src := nicScript + `uprobe:` + bin + `:seen {
	$n = (struct nic *)arg0;
	printf("%s %s %s %s\n", macaddr($n->mac), macaddr($n->name), macaddr(arg1), macaddr($n));
	@[macaddr($n->mac), 5] = count();
	@v = macaddr(arg1);
}`
	want := "00:1C:42:35:20:09 02:00:5E:10:00:01 DE:AD:BE:EF:B5:0A 07:00:00:00:00:1C\n" +
		"\n\n" +
		"@[00:1C:42:35:20:09, 5]: 1\n" +
		"@v: DE:AD:BE:EF:B5:0A\n"
	checkBothPrint(t, bin, src, want)
}

// TestRunMacaddrOfBuf takes a MAC address from buf()'s six bytes, which
// bpftrace 0.17 refuses ("argument must be 6 bytes in size"), and prints
// it as a JSON string, which 0.17 leaves unquoted.
func TestRunMacaddrOfBuf(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "nic", nicSource)
	src := `uprobe:` + bin + `:seen { @b = macaddr(buf(arg1, 6)); }`
	out := traceCommand(t, bin, src, Options{Format: "json"})
	if want := `{"type": "map", "data": {"@b": "DE:AD:BE:EF:B5:0A"}}`; !strings.Contains(out, want) {
		t.Errorf("output:\n%s\nwant a line %s", out, want)
	}
}

// TestRunArrayValues stores and prints an array member of a struct as its
// elements: print(), a map value, a tuple's element and a map key, as
// bpftrace 0.17 does, not as the array's address, which gotrace stored
// before. 0.17 prints the bytes of an array in a key as signed (181 as
// -75); gotrace prints them as their type says, which bytes under 128
// cannot tell apart, so the key is compared with bpftrace's here and the
// byte over 127 in TestRunArrayKeyUnsigned.
func TestRunArrayValues(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "nic", nicSource)
	src := nicScript + `uprobe:` + bin + `:seen {
	$n = (struct nic *)arg0;
	$a = $n->mac;
	printf("%d %d\n", $a[1], $n->mac[5]);
	print($n->mac);
	@v = $a;
	@t = (1, $n->mac);
	@k[$n->mac] = 2;
	@peer = ((struct nic *)arg1)->mac;
}`
	want := "28 9\n" +
		"[0,28,66,53,32,9]\n" +
		"\n\n" +
		"@k[[0,28,66,53,32,9]]: 2\n" +
		"@peer: [181,10,11,255,238,1]\n" +
		"@t: (1, [0,28,66,53,32,9])\n" +
		"@v: [0,28,66,53,32,9]\n"
	checkBothPrint(t, bin, src, want)
}

// TestRunArrayInMap indexes an array a map holds, directly and through a
// variable, and copies it to another map, as bpftrace 0.17 does: gotrace
// refused the reads ("map @a holds uint8[6], not an integer"). A missing
// element's array reads as zeroes.
func TestRunArrayInMap(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "nic", nicSource)
	src := nicScript + `uprobe:` + bin + `:seen {
	$n = (struct nic *)arg0;
	@a[0] = $n->mac;
	$v = @a[0];
	printf("%d %d %d %d %s\n", @a[0][1], @a[0][5], $v[2], @a[7][1], macaddr(@a[0]));
	@b = @a[0];
}`
	want := "28 9 66 0 00:1C:42:35:20:09\n" +
		"\n\n" +
		"@a[0]: [0,28,66,53,32,9]\n" +
		"@b: [0,28,66,53,32,9]\n"
	checkBothPrint(t, bin, src, want)
}

// TestRunArrayKeyUnsigned prints the bytes of an unsigned char array in
// a map key as unsigned, as they print in a value (bpftrace 0.17: -75 in
// a key, 181 in a value).
func TestRunArrayKeyUnsigned(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "nic", nicSource)
	src := nicScript + `uprobe:` + bin + `:seen { @k[((struct nic *)arg1)->mac] = 1; }`
	out := traceCommand(t, bin, src, Options{})
	if want := "@k[[181,10,11,255,238,1]]: 1\n"; !strings.Contains(out, want) {
		t.Errorf("output:\n%s\nwant a line %q", out, want)
	}
}

// connectSource connects to 127.0.0.2 on a port nothing listens on:
// the socket goes to SYN_SENT in connect(), in the process itself, and
// the connection is refused.
const connectSource = `#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
int main(void)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)};
	inet_pton(AF_INET, "127.0.0.2", &to.sin_addr);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	connect(s, (struct sockaddr *)&to, sizeof(to));
	close(s);
	return 0;
}
`

// TestRunTracepointArrays reads the array fields of a tracepoint's
// record (sock:inet_sock_set_state's __u8 daddr[4]): by index, through a
// variable, with ntop(), as bpftrace 0.17 does. gotrace refused them
// before ("as an integer: not supported"). print() and a map store the
// elements, which 0.17 refuses ("not printable", "context cannot be
// assigned to a map").
func TestRunTracepointArrays(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "connect", connectSource)
	common := `tracepoint:sock:inet_sock_set_state /pid == cpid && args->newstate == 2/ {
	$a = args->daddr;
	printf("%s %d %d %s\n", ntop(args->daddr), args->daddr[0], $a[3], ntop($a));
`
	want := "127.0.0.2 127 2 127.0.0.2\n"
	bpftrace := testenv.RequireBpftrace(t)
	theirs, err := exec.Command(bpftrace, "-q", "-c", bin, "-e", common+"}").Output()
	if err != nil {
		t.Fatalf("bpftrace: %v", err)
	}
	if string(theirs) != want+"\n\n" {
		t.Errorf("bpftrace printed:\n%q\nwant\n%q", theirs, want+"\n\n")
	}
	src := common + `	print(args->daddr);
	@[args->daddr] = count();
	@v6 = args->daddr_v6;
}`
	want += "[127,0,0,2]\n" +
		"\n\n" +
		"@[[127,0,0,2]]: 1\n" +
		"@v6: [0,0,0,0,0,0,0,0,0,0,255,255,127,0,0,2]\n"
	if out := traceCommand(t, bin, src, Options{}); out != want {
		t.Errorf("output:\n%q\nwant\n%q", out, want)
	}
}

// TestCaptureReplayArrays replays a capture of array values, MAC
// addresses and cgroup paths (read from the system as they print, so
// kept in the capture) as the live run printed them: the capture's reader
// refused array fields before ("field of unknown kind").
func TestCaptureReplayArrays(t *testing.T) {
	testenv.RequireRoot(t)
	bin := buildC(t, t.TempDir(), "nic", nicSource)
	src := nicScript + `uprobe:` + bin + `:seen {
	$n = (struct nic *)arg0;
	printf("%s\n", macaddr($n->mac));
	print($n->mac);
	@k[$n->mac, macaddr(arg1)] = 1;
	@v = (macaddr($n->name), $n->mac);
	@cg[cgroup_path(1, "unified")] = cgroup_path(1);
}`
	live := traceCommand(t, bin, src, Options{})
	var file bytes.Buffer
	traceCommand(t, bin, src, Options{Capture: &file})
	got, err := replayed(file.Bytes(), "text")
	if err != nil {
		t.Fatal(err)
	}
	if got != live || !strings.Contains(live, "@v: (02:00:5E:10:00:01, [0,28,66,53,32,9])\n") || !strings.Contains(live, "@cg[unified:/]: unified:/") {
		t.Errorf("replay:\n%s\nlive:\n%s", got, live)
	}
}

// traceCommand runs script src with the program at bin under -c, quiet,
// with opts, and returns what it printed.
func traceCommand(t *testing.T, bin, src string, opts Options) string {
	t.Helper()
	opts.Command, opts.Quiet = bin, true
	out, stderr, err := runScript(t, context.Background(), src, opts)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	return out
}
