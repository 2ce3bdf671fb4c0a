package proc

import "time"

// FamilyPoll is how often a Family is meant to be polled (Due, then
// Descendants): a process the command starts is seen within it.
const FamilyPoll = 10 * time.Millisecond

// After familyQuiet polls without a new descendant, only every
// familySlow-th poll is due, so that a long trace of a command that starts
// nothing costs next to nothing.
const (
	familyQuiet = 100
	familySlow  = 10
)

// Family is the processes a -c command starts, seen poll by poll: a
// command such as "sudo -u bitcoin ./bitcoind" runs the traced program as
// its descendant.
type Family struct {
	// Root is the command's process.
	Root int
	// seen are the descendants seen so far; quiet counts the polls since
	// a new one, ticks the polls; started says a descendant was seen.
	seen         map[int]bool
	quiet, ticks int
	started      bool
}

// NewFamily returns the family of process root, with no descendant seen
// yet.
func NewFamily(root int) *Family {
	return &Family{Root: root, seen: map[int]bool{}}
}

// Due counts a poll and says whether it should look at the processes:
// every poll does until familyQuiet polls have found no new descendant,
// then one in familySlow, until a new one appears.
func (f *Family) Due() bool {
	f.ticks++
	if f.quiet >= familyQuiet && f.ticks%familySlow != 0 {
		return false
	}
	f.quiet++
	return true
}

// Descendants returns Root's descendants now, and notes the new ones.
func (f *Family) Descendants() []int {
	pids := Descendants(f.Root)
	for _, pid := range pids {
		f.started = true
		if !f.seen[pid] {
			f.seen[pid] = true
			f.quiet = 0
		}
	}
	return pids
}

// Started reports whether Root was ever seen with a descendant.
func (f *Family) Started() bool { return f.started }
