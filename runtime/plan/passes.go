package plan

import "slices"

// Passes are a plan's sites in the order a run attaches them, decided
// once by the plan (passesOf): what gotrace runs itself, the groups
// attached before BEGIN (the script's, then gotrace's own) and those
// attached once BEGIN has run. The runtime attaches each pass as it is.
type Passes struct {
	// Run are the sites of the programs gotrace runs itself (BEGIN,
	// END, interval), in the script's order.
	Run []Site
	// Before are the groups of the script's sites attached before
	// BEGIN, Own gotrace's own sites (Plan.Own), attached after them and
	// before the -c command leaves its gate, and After the groups
	// attached once BEGIN has run.
	Before, Own, After []Group
}

// Group is sites attached together, by one call of the attach stage: a
// site of its own, or the locations of one usdt, uprobe or uretprobe
// attachment in one file, which one uprobe_multi link attaches.
type Group struct {
	Sites []Site
}

// First is the group's first site: its attachment, program and file
// are the whole group's.
func (g Group) First() Site { return g.Sites[0] }

// passesOf splits sites, the script's, and own, gotrace's own, into the
// passes of a run by when each is attached (Site.When).
func passesOf(sites, own []Site) Passes {
	var ps Passes
	var before, after []Site
	for _, s := range sites {
		switch s.When {
		case RunByGotrace:
			ps.Run = append(ps.Run, s)
		case BeforeBegin:
			before = append(before, s)
		case AfterBegin:
			after = append(after, s)
		}
	}
	ps.Before, ps.Own, ps.After = groupSites(before), groupSites(own), groupSites(after)
	return ps
}

// groupSites splits sites into groups: first a group for each site not
// in a user file and each site of gotrace's own, in order, then the
// groups of locations of each attachment and file, last probe first: the
// kernel runs the handlers of one location newest first, so attaching in
// reverse runs two probes of one function in script order, as bpftrace
// does.
func groupSites(sites []Site) []Group {
	var single, groups []Group
	index := map[[2]any]int{}
	for _, s := range sites {
		if !UserKind(s.Attachment.Kind) || s.Own != "" {
			single = append(single, Group{Sites: []Site{s}})
			continue
		}
		key := [2]any{s.Attachment, s.Path}
		i, ok := index[key]
		if !ok {
			i = len(groups)
			index[key] = i
			groups = append(groups, Group{})
		}
		groups[i].Sites = append(groups[i].Sites, s)
	}
	slices.Reverse(groups)
	return append(single, groups...)
}

// UserFiles returns the paths of the user files the script's probes of
// groups attach in (usdt, uprobe, uretprobe; not gotrace's own), each
// once, in the groups' order.
func UserFiles(groups []Group) []string {
	var paths []string
	for _, g := range groups {
		s := g.First()
		if UserKind(s.Attachment.Kind) && s.Own == "" && !slices.Contains(paths, s.Path) {
			paths = append(paths, s.Path)
		}
	}
	return paths
}
