package dolt_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/bdclaim/bd-claim/claim"
	"github.com/bdclaim/bd-claim/claim/claimtest"
	"github.com/bdclaim/bd-claim/claim/conformance"
)

// filterCase is one filter as bd-claim's library takes it and as the
// same filter's bd ready flags spell it; rule is the rule --explain counts
// its exclusions under ("" for a filter that drops rules).
type filterCase struct {
	name string
	f    claim.Filters
	bd   []string
	rule string
}

// paritySeed is the seed of a randomized workspace, logged;
// BD_CLAIM_PARITY_SEED replays one.
func paritySeed(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("BD_CLAIM_PARITY_SEED"); s != "" {
		var err error
		seed, err = strconv.ParseUint(s, 10, 64)
		assert.NilError(t, err)
	}
	t.Logf("seed %d (BD_CLAIM_PARITY_SEED=%d replays this workspace)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0xf117))
}

// bdReady is `bd ready -u -n 0 -s priority ARGS --json` (bd-claim's
// default order) as a list of ids, in bd's order. An issue bd lists twice
// counts once, at its first place: bd v0.47.1's --label-any lists an
// issue with two of the labels twice (measured), an issue a claim can
// take only once.
func bdReady(t *testing.T, bd *claimtest.BdRunner, args ...string) []string {
	t.Helper()
	var list []struct{ ID string }
	bd.JSON(&list, append([]string{"ready", "-u", "-n", "0", "-s", "priority"}, args...)...)
	ids := []string{}
	for _, iss := range list {
		if !slices.Contains(ids, iss.ID) {
			ids = append(ids, iss.ID)
		}
	}
	return ids
}

// nextOrder is the order in which agent's claim-next with filters f takes
// the issues: before each claim, a dry run names the issue the claim then
// takes; then every issue is released.
func nextOrder(t *testing.T, s *claim.Store, agent string, f claim.Filters) []string {
	t.Helper()
	ctx := context.Background()
	got := []string{}
	for len(got) <= 200 {
		dry, err := s.Claim(ctx, claim.Request{Agent: agent, DryRun: true, Filters: f})
		assert.NilError(t, err)
		res, err := s.Claim(ctx, claim.Request{Agent: agent, Filters: f})
		assert.NilError(t, err)
		if res.Issue == nil {
			assert.Check(t, dry.Issue == nil, "the dry run named %v, the claim took nothing", dry.Issue)
			break
		}
		if assert.Check(t, dry.Issue != nil, "the dry run named nothing, the claim took %s", res.Issue.ID) {
			assert.Check(t, is.Equal(dry.Issue.ID, res.Issue.ID), "the dry run names the claim's issue")
		}
		got = append(got, res.Issue.ID)
	}
	for _, id := range got {
		_, err := s.Release(ctx, claim.ReleaseRequest{Agent: agent, ID: id})
		assert.NilError(t, err)
	}
	return got
}

// checkFilterParity runs each case on the workspace: claim-next takes
// exactly bd ready -u's issues with the same filter, in its order; the
// explanation counts as claimable what bd lists, and has the case's rule.
// It returns how many cases bd listed something for.
func checkFilterParity(t *testing.T, bd *claimtest.BdRunner, s *claim.Store, cases []filterCase) int {
	t.Helper()
	nonEmpty := 0
	for _, c := range cases {
		want := bdReady(t, bd, c.bd...)
		f := c.f
		f.OnlyUnassigned = true // bd ready --claim takes unassigned issues only
		got := nextOrder(t, s, "filter-agent", f)
		assert.Check(t, is.DeepEqual(got, want), "%s: bd ready -u %v", c.name, c.bd)
		e, err := s.Explain(context.Background(), claim.Request{Agent: "filter-agent", Filters: f})
		assert.NilError(t, err)
		assert.Check(t, is.Equal(e.Claimable, len(want)), "%s: %+v", c.name, e)
		if c.rule != "" {
			_, ok := e.Excluded[c.rule]
			assert.Check(t, ok, "%s: explain has no rule %s: %v", c.name, c.rule, e.Excluded)
		}
		if len(want) > 0 {
			nonEmpty++
		}
		t.Logf("%s: bd ready lists %d", c.name, len(want))
	}
	return nonEmpty
}

// v13Cases are the filters of bd ready v1.3.0 that bd-claim takes, with
// values the workspaces of buildFilterWorkspace exercise.
func v13Cases() []filterCase {
	p := func(n int) *int { return &n }
	return []filterCase{
		{"label-any", claim.Filters{LabelsAny: []string{"tech-debt", "ops"}}, []string{"--label-any", "tech-debt", "--label-any", "ops"}, "label_any"},
		{"label-any with label", claim.Filters{LabelsAny: []string{"ops", "backend"}, IncludeLabels: []string{"tech-debt"}},
			[]string{"--label-any", "ops", "--label-any", "backend", "--label", "tech-debt"}, "label_any"},
		{"label-pattern", claim.Filters{LabelPattern: "tech-*"}, []string{"--label-pattern", "tech-*"}, "label_pattern"},
		{"label-pattern is case-sensitive", claim.Filters{LabelPattern: "Tech-*"}, []string{"--label-pattern", "Tech-*"}, "label_pattern"},
		{"label-pattern ? and a literal _", claim.Filters{LabelPattern: "a_?"}, []string{"--label-pattern", "a_?"}, "label_pattern"},
		{"label-pattern anchored", claim.Filters{LabelPattern: "ops"}, []string{"--label-pattern", "ops"}, "label_pattern"},
		{"label-regex", claim.Filters{LabelRegex: "tech-(debt|legacy)"}, []string{"--label-regex", "tech-(debt|legacy)"}, "label_regex"},
		{"label-regex unanchored", claim.Filters{LabelRegex: "ps"}, []string{"--label-regex", "ps"}, "label_regex"},
		{"label-regex anchored by hand", claim.Filters{LabelRegex: "^a.b$"}, []string{"--label-regex", "^a.b$"}, "label_regex"},
		{"exclude-type", claim.Filters{ExcludeTypes: []string{"bug"}}, []string{"--exclude-type", "bug"}, "exclude_type"},
		{"exclude-type alias, comma and custom", claim.Filters{ExcludeTypes: []string{"feat,convoy", "chore"}},
			[]string{"--exclude-type", "feat,convoy", "--exclude-type", "chore"}, "exclude_type"},
		{"exclude-type ignored with type", claim.Filters{Types: []string{"task"}, ExcludeTypes: []string{"task"}},
			[]string{"-t", "task", "--exclude-type", "task"}, "type"},
		{"has-metadata-key", claim.Filters{HasMetadataKey: "gc.routed_to"}, []string{"--has-metadata-key", "gc.routed_to"}, "has_metadata_key"},
		{"has-metadata-key, a null value", claim.Filters{HasMetadataKey: "nul"}, []string{"--has-metadata-key", "nul"}, "has_metadata_key"},
		{"has-metadata-key, nested is not dotted", claim.Filters{HasMetadataKey: "gc"}, []string{"--has-metadata-key", "gc"}, "has_metadata_key"},
		{"metadata-field", claim.Filters{MetadataFields: map[string]string{"gc.routed_to": "pool-a"}},
			[]string{"--metadata-field", "gc.routed_to=pool-a"}, "metadata_field:gc.routed_to"},
		{"metadata-field number and string", claim.Filters{MetadataFields: map[string]string{"n": "2"}}, []string{"--metadata-field", "n=2"}, "metadata_field:n"},
		{"metadata-field 02", claim.Filters{MetadataFields: map[string]string{"n": "02"}}, []string{"--metadata-field", "n=02"}, "metadata_field:n"},
		{"metadata-field bool", claim.Filters{MetadataFields: map[string]string{"ok": "true"}}, []string{"--metadata-field", "ok=true"}, "metadata_field:ok"},
		{"metadata-field null", claim.Filters{MetadataFields: map[string]string{"nul": "null"}}, []string{"--metadata-field", "nul=null"}, "metadata_field:nul"},
		{"metadata-field, two", claim.Filters{MetadataFields: map[string]string{"gc.routed_to": "pool-b", "n": "2"}},
			[]string{"--metadata-field", "gc.routed_to=pool-b", "--metadata-field", "n=2"}, "metadata_field:n"},
		{"priority", claim.Filters{Priority: p(1)}, []string{"--priority", "1"}, "exact_priority"},
		{"priority 0", claim.Filters{Priority: p(0)}, []string{"--priority", "0"}, "exact_priority"},
		{"include-deferred", claim.Filters{IncludeDeferred: true}, []string{"--include-deferred"}, ""},
		{"include-deferred with label-any and priority", claim.Filters{IncludeDeferred: true, LabelsAny: []string{"ops", "tech-legacy"}, Priority: p(2)},
			[]string{"--include-deferred", "--label-any", "ops", "--label-any", "tech-legacy", "--priority", "2"}, "label_any"},
	}
}

// buildFilterWorkspace fills a workspace with the real bd at random
// (rnd): issues of every type bd ready lists (and a custom one, convoy,
// when custom), with labels, priorities 0-4, deferrals to the future and to
// the past, children of a deferred parent, blocked issues, issues assigned
// to someone else, and, when metadata, metadata set by `bd update
// --set-metadata` (numbers, booleans, null, strings) or by `bd create
// --metadata` (strings that read as numbers, nested objects). Every kind
// appears at least once.
func buildFilterWorkspace(t *testing.T, bd *claimtest.BdRunner, rnd *rand.Rand, metadata, custom bool) {
	t.Helper()
	pick := func(list []string) string { return list[rnd.IntN(len(list))] }
	types := []string{"task", "task", "bug", "feature", "chore", "epic"}
	if custom {
		bd.OK("config", "set", "types.custom", "convoy")
		types = append(types, "convoy", "decision", "spike")
	}
	labels := []string{"tech-debt", "tech-legacy", "Tech-ops", "ops", "backend", "a_b", "aXb", "Ops"}
	sets := [][]string{{"gc.routed_to=pool-a"}, {"gc.routed_to=pool-b", "n=2"}, {"gc.routed_to=pool-c"}, {"n=2.5"}, {"n=02"}, {"ok=true"}, {"nul=null"}, {"n=2", "ok=false"}}
	jsons := []string{`{"n":"2"}`, `{"gc":{"routed_to":"pool-a"}}`, `{"gc.routed_to":"pool-a","n":"2"}`, `{"n":[2]}`}
	kinds := []string{"deferred-parent", "defer-future", "defer-past", "blocked", "assigned"}
	for range labels {
		kinds = append(kinds, "label")
	}
	if metadata {
		for range len(sets) + len(jsons) {
			kinds = append(kinds, "metadata")
		}
	}
	for len(kinds) < 44 {
		kinds = append(kinds, pick([]string{"plain", "label", "metadata", "defer-future", "blocked", "assigned"}))
	}
	rnd.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	var ids []string
	nLabel, nSet, nJSON := 0, 0, 0
	for i, kind := range kinds {
		flags := []string{"create", "f" + strconv.Itoa(i) + " " + kind, "-p", strconv.Itoa(rnd.IntN(5)), "-t", pick(types)}
		if kind == "label" || rnd.IntN(3) == 0 {
			l := pick(labels)
			if kind == "label" && nLabel < len(labels) {
				l, nLabel = labels[nLabel], nLabel+1
			}
			flags = append(flags, "-l", l)
			if rnd.IntN(3) == 0 {
				flags = append(flags, "-l", pick(labels))
			}
		}
		var set []string
		switch kind {
		case "deferred-parent", "defer-future":
			flags = append(flags, "--defer", "+"+strconv.Itoa(2+rnd.IntN(48))+"h")
		case "defer-past":
			flags = append(flags, "--defer", "2020-01-0"+strconv.Itoa(1+rnd.IntN(9)))
		case "assigned":
			flags = append(flags, "-a", "someone-else")
		case "metadata":
			switch {
			case !metadata: // a plain issue where bd has no metadata
			case nSet < len(sets):
				set, nSet = sets[nSet], nSet+1
			case nJSON < len(jsons):
				flags, nJSON = append(flags, "--metadata", jsons[nJSON]), nJSON+1
			case rnd.IntN(2) == 0:
				set = sets[rnd.IntN(3)] // routed: more of them
			default:
				set = sets[rnd.IntN(len(sets))]
			}
		}
		var out struct{ ID string }
		bd.JSON(&out, flags...)
		if kind == "blocked" && len(ids) > 0 {
			bd.OK("dep", "add", out.ID, pick(ids))
		}
		ids = append(ids, out.ID)
		if len(set) > 0 {
			args := []string{"update", out.ID}
			for _, kv := range set {
				args = append(args, "--set-metadata", kv)
			}
			bd.OK(args...)
		}
		if kind == "deferred-parent" {
			for range 2 {
				bd.JSON(&out, "create", "child of a deferred parent", "--parent", ids[len(ids)-1], "-p", strconv.Itoa(rnd.IntN(5)), "-l", pick(labels))
			}
		}
	}
}

// Every filter of bd ready v1.3.0 on a Dolt workspace (server mode) the
// real bd builds at random: claim-next with the filter takes exactly
// `bd ready -u -n 0` with the same filter, in its order, and a dry run
// names each claim's issue first.
func TestDoltFilterParity(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "flt")
	buildFilterWorkspace(t, &w.BdRunner, paritySeed(t), true, true)
	s := doltStore(t, w, claim.Options{})
	cases := v13Cases()
	assert.Check(t, checkFilterParity(t, &w.BdRunner, s, cases) >= len(cases)*2/3, "too few filters list anything to compare")
}

// The filters bd-claim refuses on any workspace: a bad value, named, before
// any issue is read. bd accepts an unknown --exclude-type silently, and
// reports a bad regex only as a failed query.
func TestDoltFilterRefusals(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "frf")
	w.OK("config", "set", "types.custom", "convoy,slot")
	bdCreate(t, w, "one", "-t", "convoy")
	s := doltStore(t, w, claim.Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		f   claim.Filters
		msg string
	}{
		{claim.Filters{ExcludeTypes: []string{"convoy", "bogus"}}, `unknown --exclude-type "bogus": not a type bd 1.3.0 builds in`},
		{claim.Filters{LabelRegex: "("}, `invalid --label-regex "("`},
		{claim.Filters{MetadataFields: map[string]string{"a b": "1"}}, `invalid --metadata-field key "a b"`},
	} {
		_, err := s.Claim(ctx, claim.Request{Agent: "a", Filters: tc.f})
		assert.Check(t, is.Equal(claim.ErrorCode(err), claim.EInvalid))
		assert.Check(t, is.ErrorContains(err, tc.msg))
		_, err = s.Explain(ctx, claim.Request{Agent: "a", Filters: tc.f})
		assert.Check(t, is.ErrorContains(err, tc.msg))
	}
	// Custom types from the database's config, the custom_types table and
	// config.yaml are all known; built-in and never-ready types too.
	assert.NilError(t, os.WriteFile(w.Dir+"/.beads/config.yaml", []byte("types:\n  custom: [widget]\n"), 0o644))
	_, err := w.DB(t).Exec("INSERT INTO custom_types (name) VALUES ('gizmo')")
	assert.NilError(t, err)
	for _, typ := range []string{"convoy", "slot", "widget", "gizmo", "spike", "rig", "merge-request", "mr"} {
		res, err := s.Claim(ctx, claim.Request{Agent: "a", DryRun: true, Filters: claim.Filters{ExcludeTypes: []string{typ}}})
		assert.Check(t, err, typ)
		assert.Check(t, res.Issue != nil || typ == "convoy", typ)
	}
}

// A routed swarm: 3 pools of 6 agents each claim `--metadata-field
// gc.routed_to=POOL --only-unassigned` until nothing is left; every routed
// issue is claimed exactly once, by an agent of its pool, and no other
// issue is claimed; no claim gives up waiting for its turn.
func TestDoltRoutedSwarm(t *testing.T) {
	w := claimtest.NeedDolt(t).Workspace(t, "rts")
	pools := []string{"pool-a", "pool-b", "pool-c"}
	routed := map[string]string{} // issue → pool
	var others []string
	for i := range 36 {
		pool := pools[i%3]
		switch {
		case i%9 == 8: // not routed
			others = append(others, bdCreate(t, w, "unrouted", "-p", strconv.Itoa(i%5)))
		case i%2 == 0:
			id := bdCreate(t, w, "routed to "+pool, "-p", strconv.Itoa(i%5))
			w.OK("update", id, "--set-metadata", "gc.routed_to="+pool)
			routed[id] = pool
		default:
			routed[bdCreate(t, w, "routed to "+pool, "-p", strconv.Itoa(i%5), "--metadata", `{"gc.routed_to":"`+pool+`"}`)] = pool
		}
	}
	var mu sync.Mutex
	got := map[string][]string{} // issue → agents
	var wg sync.WaitGroup
	for _, pool := range pools {
		for a := range 6 {
			agent := fmt.Sprintf("%s-agent-%d", pool, a)
			s := doltStore(t, w, claim.Options{})
			wg.Go(func() {
				for {
					res, err := s.Claim(context.Background(), claim.Request{Agent: agent,
						Filters: claim.Filters{OnlyUnassigned: true, MetadataFields: map[string]string{"gc.routed_to": pool}}})
					if !assert.Check(t, err, agent) || res.Issue == nil { // a busy claim too: the default wait outlasts the swarm
						return
					}
					mu.Lock()
					got[res.Issue.ID] = append(got[res.Issue.ID], agent)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	assert.DeepEqual(t, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(routed)))
	conn := w.DB(t)
	for id, agents := range got {
		assert.Check(t, is.Len(agents, 1), "%s claimed by %v", id, agents)
		assert.Check(t, is.Equal(agents[0][:len(routed[id])], routed[id]), "%s of %s claimed by %s", id, routed[id], agents[0])
		var assignee string
		assert.NilError(t, conn.QueryRow("SELECT assignee FROM issues WHERE id = ?", id).Scan(&assignee))
		assert.Check(t, is.Equal(assignee, agents[0]))
	}
	for _, id := range others {
		assert.Check(t, is.Equal(claimtest.Count(t, conn, "SELECT count(*) FROM issues WHERE status = 'open' AND id = '"+id+"'"), 1), id)
	}
}

// sqliteCases are the filters of bd ready that the SQLite-era bd (v0.47.1,
// v0.49.6) has: --label-any, --priority, --include-deferred, with --type
// and --label.
func sqliteCases() []filterCase {
	p := func(n int) *int { return &n }
	return []filterCase{
		{"label-any", claim.Filters{LabelsAny: []string{"tech-debt", "ops"}}, []string{"--label-any", "tech-debt", "--label-any", "ops"}, "label_any"},
		{"label-any with label", claim.Filters{LabelsAny: []string{"ops", "backend"}, IncludeLabels: []string{"tech-debt"}},
			[]string{"--label-any", "ops", "--label-any", "backend", "--label", "tech-debt"}, "label_any"},
		{"priority", claim.Filters{Priority: p(1)}, []string{"--priority", "1"}, "exact_priority"},
		{"priority with type", claim.Filters{Priority: p(2), Types: []string{"task"}}, []string{"--priority", "2", "-t", "task"}, "exact_priority"},
		{"include-deferred", claim.Filters{IncludeDeferred: true}, []string{"--include-deferred"}, ""},
		{"include-deferred with label-any", claim.Filters{IncludeDeferred: true, LabelsAny: []string{"ops", "tech-legacy", "a_b"}},
			[]string{"--include-deferred", "--label-any", "ops", "--label-any", "tech-legacy", "--label-any", "a_b"}, "label_any"},
	}
}

// Every filter on every other engine, on workspaces their real bd builds
// at random: the SQLite-era bd's (v0.47.1, v0.49.6) with the filters its
// bd ready has; the embedded (embedded build) and proxied-server modes of
// bd v1.3.0 with every filter (server mode is TestDoltFilterParity's).
func TestFilterParityEngines(t *testing.T) {
	if testing.Short() {
		t.Skip("builds workspaces with the real bd releases (skipped under -short)")
	}
	sqliteSetup := func(version string) func(t *testing.T) *claimtest.BdRunner {
		return func(t *testing.T) *claimtest.BdRunner { return &claimtest.SQLiteWorkspace(t, version).BdRunner }
	}
	for _, setup := range []conformance.Setup{
		{Name: "sqlite-v0.47.1", New: sqliteSetup("v0.47.1")},
		{Name: "sqlite-v0.49.6", New: sqliteSetup("v0.49.6")},
		{Name: "dolt-embedded", New: embeddedSetup},
		{Name: "dolt-proxied", New: func(t *testing.T) *claimtest.BdRunner { return &claimtest.ProxiedWorkspace(t, "px").BdRunner }},
	} {
		t.Run(setup.Name, func(t *testing.T) {
			t.Parallel()
			w := &conformance.Workspace{BdRunner: setup.New(t)}
			dolt := !strings.HasPrefix(setup.Name, "sqlite")
			buildFilterWorkspace(t, w.BdRunner, paritySeed(t), dolt, dolt)
			cases := sqliteCases()
			if dolt {
				cases = v13Cases()
			}
			s := w.Store(t, claim.Options{})
			assert.Check(t, checkFilterParity(t, w.BdRunner, s, cases) >= len(cases)/2, "too few filters list anything to compare")
		})
	}
}

// The filters bd-claim applies to a SQLite workspace of bd v0.49.6 though
// that bd's ready has no such flag (--label-pattern, --exclude-type, the
// metadata filters) mean what they mean to bd ready v1.3.0: the same
// issues, made by each bd, are the ones bd-claim claims on SQLite and bd
// v1.3.0 lists on Dolt.
func TestSQLiteFiltersAsBdV13(t *testing.T) {
	server := claimtest.NeedDolt(t)
	sw := claimtest.SQLiteWorkspace(t, "v0.49.6")
	dw := server.Workspace(t, "sq13")
	issues := []struct {
		labels, typ, metadata string
	}{
		{"tech-debt", "task", `{"gc.routed_to":"pool-a"}`},
		{"tech-legacy,ops", "bug", `{"gc.routed_to":"pool-b","n":2}`},
		{"Tech-ops", "feature", `{"n":"2"}`},
		{"a_b", "chore", `{"n":2.5}`},
		{"aXb", "convoy", `{"n":"02"}`},
		{"a[b]", "task", `{"ok":true}`},
		{"ops", "epic", `{"nul":null}`},
		{"", "task", `{"gc":{"routed_to":"pool-a"}}`},
		{"backend", "bug", `{"n":[2]}`},
		{"tech-x", "task", `{}`},
		{"", "chore", ``},
	}
	for _, bd := range []*claimtest.BdRunner{&sw.BdRunner, &dw.BdRunner} {
		bd.OK("config", "set", "types.custom", "convoy")
		for i, iss := range issues {
			flags := []string{"create", "s" + strconv.Itoa(i), "-t", iss.typ, "-p", strconv.Itoa(i % 5)}
			if iss.labels != "" {
				flags = append(flags, "-l", iss.labels)
			}
			var out struct{ ID string }
			bd.JSON(&out, flags...)
			if iss.metadata != "" {
				bd.OK("update", out.ID, "--metadata", iss.metadata)
			}
		}
	}
	titles := func(bd *claimtest.BdRunner, ids []string) []string {
		out := []string{}
		for _, id := range ids {
			var list []struct{ Title string }
			bd.JSON(&list, "show", id)
			out = append(out, list[0].Title)
		}
		slices.Sort(out)
		return out
	}
	s := conformance.OpenAt(t, sw.Dir, sw.Getenv, claim.Options{})
	for _, c := range v13Cases() {
		if c.f.LabelRegex != "" || c.f.IncludeDeferred || len(c.f.LabelsAny) > 0 || c.f.Priority != nil {
			continue // a filter bd v0.49.6's ready has (TestFilterParityEngines), or refuses
		}
		want := titles(&dw.BdRunner, bdReady(t, &dw.BdRunner, c.bd...))
		f := c.f
		f.OnlyUnassigned = true
		got := titles(&sw.BdRunner, nextOrder(t, s, "sqlite-agent", f))
		assert.Check(t, is.DeepEqual(got, want), "%s: bd v1.3.0's ready %v", c.name, c.bd)
		assert.Check(t, len(want) > 0 && len(want) < len(issues), "%s: %v filters nothing out, or everything", c.name, want)
	}
	for _, glob := range []string{"a[b]", "a[b]*", "*[*", "a?b"} { // GLOB's [ is literal, as in bd's LIKE
		want := titles(&dw.BdRunner, bdReady(t, &dw.BdRunner, "--label-pattern", glob))
		got := titles(&sw.BdRunner, nextOrder(t, s, "sqlite-agent", claim.Filters{OnlyUnassigned: true, LabelPattern: glob}))
		assert.Check(t, is.DeepEqual(got, want), "--label-pattern %s", glob)
	}
}
