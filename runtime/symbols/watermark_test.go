package symbols

import (
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/gotrace/gotrace/internal/testenv"
	"github.com/gotrace/gotrace/usdt"
)

// TestTrackDrainsAtWatermark runs processes until far more mapping
// records than a ring holds have been written, never calling Drain,
// Refresh or a lookup, and waits for the listener to be told of them:
// only the kernel's wake-up at a ring's watermark drains the rings then.
// Before it, a burst of processes between two Refreshes of a busy machine
// filled the rings and lost the mappings of processes that had exited.
func TestTrackDrainsAtWatermark(t *testing.T) {
	testenv.RequireRoot(t)
	s := New(0, nil, &usdt.Files{})
	var mu sync.Mutex
	told := map[int]bool{}
	s.OnMappings(func(pid int, _ Mappings) {
		mu.Lock()
		told[pid] = true
		mu.Unlock()
	})
	if err := s.Track(0); err != nil {
		testenv.Unavailable(t, "mapping records: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	// Each run of true writes a dozen records or more (its exec, its
	// mappings, its exit), about 1 KiB: 600 runs are more than two rings
	// of trackerRingPages pages hold, whatever CPUs they run on.
	const runs = 600
	var pids []int
	for range runs {
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatalf("run true: %v", err)
		}
		pids = append(pids, cmd.Process.Pid)
	}
	// The records of the first runs are past a watermark: wait for the
	// listener to have them (the last runs' may sit below one).
	deadline := time.Now().Add(time.Minute)
	for {
		mu.Lock()
		got := told[pids[0]]
		mu.Unlock()
		if got {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d processes, the mappings of the first (%d) were not drained from the rings in a minute", runs, pids[0])
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Whether a ring still filled depends on how soon the drain ran
	// after its wake-up, which is the machine's load: said, not checked.
	t.Logf("mapping records lost over %d processes: %d", runs, s.LostRecords())
}
