package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// floorSource is the smallest Go program: it only exits. Its start-up,
// measured as the tools are, is the floor under any Go tool's on this
// machine, which a start-up target cannot go below. On the paravirtualised
// VMs of this project a page fault costs 10-30 µs, and this program alone
// takes 5-7 ms from fork to reaping.
const floorSource = "package main\n\nfunc main() {}\n"

// startupFloor builds floorSource statically into dir and returns its
// median wall from fork to reaping and its median peak RSS over n runs,
// taken by the same helper that measures the tools.
func startupFloor(dir string, n int) (wall time.Duration, rss int64, err error) {
	src := filepath.Join(dir, "floor.go")
	if err := os.WriteFile(src, []byte(floorSource), 0o644); err != nil {
		return 0, 0, fmt.Errorf("write floor.go: %w", err)
	}
	bin := filepath.Join(dir, "floor")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, 0, fmt.Errorf("build floor program: %w\n%s", err, out)
	}
	report := filepath.Join(dir, "floor.rss")
	defer os.Remove(report)
	var walls, rsss []float64
	for range n {
		cmd := exec.Command(rssHelper, bin)
		cmd.Env = append(os.Environ(), "RSS_OUT="+report)
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, 0, fmt.Errorf("run floor program: %w\n%s", err, out)
		}
		bytes, wall, err := readReport(report)
		if err != nil {
			return 0, 0, fmt.Errorf("floor program: %w", err)
		}
		walls = append(walls, float64(wall))
		rsss = append(rsss, float64(bytes))
	}
	return time.Duration(median(walls)), int64(median(rsss)), nil
}

// printFloor measures and prints the floor before the start-up cases.
func printFloor(w io.Writer, dir string, n int) error {
	wall, rss, err := startupFloor(dir, n)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "floor: a static Go program that only exits: %.1f ms, %.1f MiB (median of %d, fork to reaping)\n\n",
		float64(wall)/1e6, float64(rss)/(1<<20), n)
	return nil
}

// readReport reads what the rss helper wrote to path: the peak RSS in KiB,
// then the wall in nanoseconds from its fork to its reaping of the command
// (the command's own time, without the bench's exec of the helper).
func readReport(path string) (rss int64, wall time.Duration, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("read peak RSS and wall: %w", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) != 2 {
		return 0, 0, fmt.Errorf("read peak RSS and wall %q: want two numbers", b)
	}
	kib, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("read peak RSS %q: %w", fields[0], err)
	}
	ns, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0, 0, fmt.Errorf("read wall %q: %w", fields[1], err)
	}
	return kib * 1024, time.Duration(ns), nil
}
