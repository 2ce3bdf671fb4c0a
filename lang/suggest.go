package lang

// ClosestName returns the candidate nearest to name by edit distance, or ""
// when none is close enough to be a likely typo. The runtime uses it to
// suggest a probe or function name an attach point misspelt.
func ClosestName(name string, candidates []string) string {
	return closestName(name, candidates)
}
