package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Descendants returns the PIDs of root's descendants, read from every
// thread's children in /proc.
func Descendants(root int) []int {
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			continue
		}
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, task.Name()))
			if err != nil {
				continue
			}
			for _, w := range strings.Fields(string(b)) {
				if c, err := strconv.Atoi(w); err == nil {
					out = append(out, c)
					queue = append(queue, c)
				}
			}
		}
	}
	return out
}
