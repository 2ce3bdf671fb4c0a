package attach

import "testing"

func TestOnlineCPUs(t *testing.T) {
	cpus, err := OnlineCPUs()
	if err != nil || len(cpus) == 0 || cpus[0] != 0 {
		t.Errorf("OnlineCPUs() = %v, %v", cpus, err)
	}
}
