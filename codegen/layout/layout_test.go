package layout

import "testing"

func TestLhistBuckets(t *testing.T) {
	for _, tc := range []struct {
		l    Lhist
		want int64
	}{
		{Lhist{Min: 0, Max: 100, Step: 10}, 12},
		{Lhist{Min: 0, Max: 10, Step: 3}, 5}, // the last step is cut at Max
		{Lhist{Min: -5, Max: 5, Step: 5}, 4},
		{Lhist{Min: 0, Max: 100, Step: 0}, 0},
		{Lhist{Min: 0, Max: 100, Step: -1}, 0},
		{Lhist{Min: 5, Max: 5, Step: 1}, 0},
	} {
		if got := tc.l.Buckets(); got != tc.want {
			t.Errorf("%+v.Buckets() = %d, want %d", tc.l, got, tc.want)
		}
	}
}
