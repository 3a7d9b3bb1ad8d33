package claim

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/go-sql-driver/mysql"

	"github.com/bdclaim/bd-claim/claim/dolt"
	"github.com/bdclaim/bd-claim/claim/sqlite"
	"github.com/bdclaim/bd-claim/db"
	doltdb "github.com/bdclaim/bd-claim/db/dolt"
)

// A Dolt workspace (bd v1.3.x in server mode) is the same claim over
// another engine: the issues row moves with a compare-and-swap on row_lock
// (Dolt has no row locks; its optimistic commit fails the second of two
// conflicting transactions with error 1213, and the whole transaction is
// tried again), bd's leases table holds the lease, the claimed event has
// bd's content-derived id, and after the SQL commit a Dolt commit records
// the issues change as bd makes it.

// doltSchema is the main-series migration of the bd release whose Dolt
// schema is vendored (sql/dolt/bd-v1.3.0.sql).
const doltSchema = 66

// doltLease is bd's fixed lease (issueops.DefaultLeaseTTL): what a claim
// without --lease gets, as `bd update --claim` writes it.
const doltLease = 5 * time.Minute

// doltStyle is what differs in what the bd of a link's mode writes: its
// Dolt commits (who authors them, what they stage, the messages that
// differ between modes; the others are the same in every mode: bd: claim
// ready ID, bd: update ID), and whether an event's old_value JSON lists
// the issue's labels.
type doltStyle struct {
	doltCommitter // a claim's commits, and a label change's
	// swept is who makes the commits of a release (bd unclaim) and of a
	// write that only ended expired claims (bd reclaim): in embedded mode,
	// bd's auto-commit after the command, which sweeps the working set
	// in; in the others, the same as the claim's.
	swept doltCommitter
	// label is a label change's message (bd label add/remove ID's),
	// unclaim a release's by actor, and reclaim that of a write by actor
	// that only ended expired claims (bd reclaim's).
	label   func(verb, id string) string
	unclaim func(id, actor string) string
	reclaim func(ids []string, actor string) string
	// updateLabels: the old_value of the claimed event of a claim by id
	// (bd update --claim) lists the issue's labels. Server and embedded
	// mode claim through issueops, which reads them; proxied mode through
	// its issue repository, which does not (its claim-next, through
	// issueops, does).
	updateLabels bool
}

// doltCommitter is who authors a Dolt commit and what it stages.
type doltCommitter struct {
	author string
	all    bool // DOLT_COMMIT('-Am'), else DOLT_ADD of the tables the write changed (dolt.Commit)
}

// bdCommitter is bd's committer, beads <beads@local>, the tables staged by
// name (its storage layer's commits).
var bdCommitter = doltCommitter{author: "beads <beads@local>"}

// bdUnclaim is bd unclaim's message in server and proxied mode.
func bdUnclaim(id, _ string) string { return "bd: unclaim " + id }

// bdStyle are bd's Dolt commits in server mode, authored by bd's
// committer.
var bdStyle = doltStyle{
	doltCommitter: bdCommitter, swept: bdCommitter,
	label:        func(verb, id string) string { return "bd: label " + verb + " " + id },
	unclaim:      bdUnclaim,
	reclaim:      func(ids []string, _ string) string { return fmt.Sprintf("bd: reclaim %d expired lease(s)", len(ids)) },
	updateLabels: true,
}

// embeddedStyle are bd's Dolt commits in embedded mode: a claim's and a
// label change's as server mode's, by bd's committer (a label change is an
// issue update there, "bd: update ID"); bd unclaim and bd reclaim leave
// theirs to the auto-commit that follows the command (DOLT_COMMIT('-Am')
// without an author: the engine's session user, root <root@%>), with its
// message (bdAutoCommit).
var embeddedStyle = doltStyle{
	doltCommitter: bdCommitter,
	swept:         doltCommitter{author: "root <root@%>", all: true},
	label:         func(_, id string) string { return "bd: update " + id },
	unclaim:       func(_, actor string) string { return bdAutoCommit("unclaim", actor, nil) },
	reclaim:       func(ids []string, actor string) string { return bdAutoCommit("reclaim", actor, ids) },
	updateLabels:  true,
}

// bdAutoCommit is the message of bd's auto-commit after command cmd by
// actor (formatDoltAutoCommitMessage): the issues it names, sorted, at
// most five.
func bdAutoCommit(cmd, actor string, ids []string) string {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return fmt.Sprintf("bd: %s (auto-commit) by %s", cmd, actor)
	}
	return fmt.Sprintf("bd: %s (auto-commit) by %s [%s]", cmd, actor, strings.Join(ids[:min(len(ids), 5)], ", "))
}

// proxiedCommitter is bd's in proxied-server mode: its unit of work
// commits with DOLT_COMMIT('-Am', message) and no author, so the session's
// user authors them (root <root@localhost>).
var proxiedCommitter = doltCommitter{author: "root <root@localhost>", all: true}

// proxiedStyle are bd's Dolt commits in proxied-server mode, all by its
// committer: a label change is an issue update without a message of its
// own ("update issue"); bd reclaim names the issues; its claim by id's
// event has no labels.
var proxiedStyle = doltStyle{
	doltCommitter: proxiedCommitter, swept: proxiedCommitter,
	label:   func(string, string) string { return "update issue" },
	unclaim: bdUnclaim,
	reclaim: func(ids []string, _ string) string { return "bd: reclaim " + strings.Join(ids, ", ") },
}

// doltTime is how bd binds events.created_at: UTC, whole seconds, as text.
const doltTime = "2006-01-02 15:04:05"

// doltEngine is the engine of a Dolt workspace (bd v1.3.x) on a server:
// bd-claim's writers take turns on a server-wide named lock, a write is
// tried again after Dolt's optimistic commit failed it, and a Dolt commit
// follows the SQL commit as bd makes it.
type doltEngine struct {
	*Store
	link  doltLink  // the server, or the embedded engine
	style doltStyle // the link's bd's Dolt commits
	dq    *doltdb.Queries
	retry sqlite.Retry
}

// openDolt opens the Dolt database link reaches for s and checks that it
// is a Beads database bd-claim writes faithfully: the schema of bd
// v1.3.0, and the project metadata.json names (projectID).
func openDolt(ctx context.Context, s *Store, link doltLink, projectID string) error {
	s.flavor = doltFlavor()
	e := &doltEngine{Store: s, link: link, style: link.commits(), dq: doltdb.New(), retry: sqlite.Retry{Attempts: 50, Backoff: 10 * time.Millisecond}}
	s.eng = e
	err := link.prepare(ctx, func(ctx context.Context, conn *sql.Conn) error { return e.check(ctx, conn, projectID) })
	if err != nil {
		link.close()
		return e.classify(err, "read the schema of "+s.Workspace.DBPath)
	}
	return nil
}

func (e *doltEngine) close() error { return e.link.close() }

// check refuses a database that is not the workspace's: not a Beads
// database, another schema than bd v1.3.0's, another project than
// metadata.json names (SCHEMA_INCOMPATIBLE).
func (e *doltEngine) check(ctx context.Context, conn *sql.Conn, projectID string) error {
	ws := e.Workspace
	err := dolt.Check(ctx, conn, dolt.Expect{Schema: doltSchema, ProjectID: projectID, Server: ws.DBPath, MetadataDir: ws.BeadsDir})
	var refused *dolt.Refusal
	if errors.As(err, &refused) {
		return Errorf(ESchema, "%s", refused)
	}
	return err
}

// doltFlavor is bd v1.3.0's `bd ready` (sqlbuild.BuildReadyWorkWhere):
// status open, not pinned, is_blocked = 0, not ephemeral, not one of the
// infrastructure types, not deferred, not a child of a deferred parent.
// bd ready lists the rows of its wisps table that pass the same rules
// (getReadyWispsInTx: the `--no-history` ones, as ephemeral wisps fail
// the ephemeral rule), merged with the issues and sorted again: the
// readiness rules range over both tables at once (doltSource).
func doltFlavor() flavor {
	return flavor{
		version: Version{1, 3, 0}, claimEvent: "claimed", eventTime: doltTime, deferral: doltDeferral, hybrid: doltHybrid,
		under: doltUnder, history: doltHistory, source: doltSource, sourceOf: doltSourceOf, labels: doltLabels,
		notBlocked:   rule{"blocked", "it is blocked by an open dependency (is_blocked)", sq.Expr("i.is_blocked = 0")},
		leaseExpired: doltLeaseExpired,
		ready: []rule{
			{"pinned", "it is pinned", sq.Expr("(i.pinned = 0 OR i.pinned IS NULL)")},
			{"ephemeral", "it is ephemeral (a wisp)", sq.Expr("(i.ephemeral = 0 OR i.ephemeral IS NULL)")},
		},
		excludedTypes: []string{"merge-request", "gate", "molecule", "rig", "agent", "role", "message"},
		glob:          doltGlob, regexp: doltRegexp, metadata: &doltMetadata, kind: "Dolt",
		types: []string{"bug", "feature", "task", "epic", "chore", "decision", "message", "molecule", "gate", "spike", "story", "milestone", "event"},
	}
}

// doltGlob is bd v1.3.0's --label-pattern (sqlbuild.globToLikePattern):
// * and ? become LIKE's % and _, and LIKE's own %, _ and the escape | are
// escaped.
func doltGlob(col, pattern string) sq.Sqlizer {
	var b strings.Builder
	for _, c := range pattern {
		switch c {
		case '%', '_', '|':
			b.WriteByte('|')
			b.WriteRune(c)
		case '*':
			b.WriteByte('%')
		case '?':
			b.WriteByte('_')
		default:
			b.WriteRune(c)
		}
	}
	return sq.Expr(col+" LIKE ? ESCAPE '|'", b.String())
}

// doltRegexp is bd v1.3.0's --label-regex: the server's REGEXP.
func doltRegexp(col, re string) sq.Sqlizer { return sq.Expr(col+" REGEXP ?", re) }

// doltMetadata is bd v1.3.0's metadata filters (sqlbuild.AppendMetadataClauses).
var doltMetadata = metadataMatch{
	has: func(key string) sq.Sqlizer { return sq.Expr("JSON_EXTRACT(i.metadata, ?) IS NOT NULL", jsonKey(key)) },
	field: func(key, value string) sq.Sqlizer {
		return sq.Expr("JSON_UNQUOTE(JSON_EXTRACT(i.metadata, ?)) = ?", jsonKey(key), value)
	},
}

// doltDeferral is bd v1.3.0's defer_until rules: the issue's own, and its
// parent's (getChildrenOfDeferredParentsInTx).
func doltDeferral(now string) []rule {
	return []rule{{"deferred", "it is deferred (defer_until is in the future)",
		sq.Expr("(i.defer_until IS NULL OR i.defer_until <= ?)", now)},
		{"deferred_parent", "its parent is deferred (defer_until is in the future)",
			sq.Expr(`i.id NOT IN (`+doltDeferredChildren+`)`, now, now, now, now)}}
}

// doltHybrid is bd v1.3.0's hybrid order (sqlbuild.BuildReadyWorkOrder),
// its cutoff from our clock.
func doltHybrid(now string) (string, []any) {
	cutoff, _ := time.Parse(doltTime, now)
	c := cutoff.Add(-48 * time.Hour).Format(doltTime)
	return `CASE WHEN i.created_at >= ? THEN 0 ELSE 1 END ASC,
	CASE WHEN i.created_at >= ? THEN i.priority ELSE 999 END ASC,
	i.created_at ASC, i.id ASC`, []any{c, c}
}

// doltUnder is bd ready --parent of bd v1.3.0 (GetDescendantIDsInTx and
// BuildReadyWorkWhere, filterReadyWispsInTx for wisps): the descendants of
// root through the parent-child edges of issues and of wisps, to an issue,
// a wisp or an external parent; and the rows whose id is root's dotted
// child (root.N) without a parent edge of their own, which bd looks up in
// dependencies for an issue and in both tables for a wisp.
func doltUnder(root string) sq.Sqlizer {
	return sq.Expr(`(i.id IN (
	WITH RECURSIVE parent_edges(child, parent) AS (
		SELECT issue_id, COALESCE(depends_on_issue_id, depends_on_wisp_id, depends_on_external) FROM dependencies WHERE type = 'parent-child'
		UNION ALL
		SELECT issue_id, COALESCE(depends_on_issue_id, depends_on_wisp_id, depends_on_external) FROM wisp_dependencies WHERE type = 'parent-child'),
	descendants(id) AS (
		SELECT child FROM parent_edges WHERE parent = ?
		UNION
		SELECT e.child FROM parent_edges e JOIN descendants d ON e.parent = d.id)
	SELECT id FROM descendants WHERE id <> ?)
	OR (i.id LIKE CONCAT(?, '.%') AND i.id NOT IN (SELECT issue_id FROM dependencies WHERE type = 'parent-child')
		AND (i.id IN (SELECT id FROM issues) OR i.id NOT IN (SELECT issue_id FROM wisp_dependencies WHERE type = 'parent-child'))))`, root, root, root)
}

// doltSource is every issue and wisp of a Dolt workspace, with the
// columns the readiness rules and the sort orders read, aliased i. Ids are
// unique across the two tables (bd routes an id to one of them).
const doltSource = "(SELECT " + doltColumns + " FROM issues UNION ALL SELECT " + doltColumns + " FROM wisps) i"

// doltColumns are the columns of doltSource.
const doltColumns = "id, status, assignee, priority, issue_type, created_at, is_blocked, pinned, ephemeral, defer_until, metadata"

// doltSourceOf is doltSource narrowed to one id in each table: the server
// does not push a condition on the union into it, and a claim by id would
// read every issue (about 4x slower at 10k issues).
func doltSourceOf(id string) sq.SelectBuilder {
	return sq.Select(doltColumns).From("issues").Where(sq.Eq{"id": id}).Suffix("UNION ALL SELECT "+doltColumns+" FROM wisps WHERE id = ?", id)
}

// doltSourceAt is doltSource narrowed to the rows that can come first in
// the priority order when top is the most urgent priority of an open
// issue or wisp: those of priority top, and the in_progress ones (an
// expired lease is claimable) more urgent than it. Each branch of the
// union reads through an index (idx_issues_priority,
// idx_issues_status_updated_at), where a condition on the union would be
// checked on every row: at 10k issues over five priorities the claim's
// query took 10-11 ms instead of 18-23 (the floor's full scan, 11-15).
func doltSourceAt(top int64) sq.SelectBuilder {
	return sq.Select(doltColumns).From("issues").Where(sq.Eq{"priority": top}).Suffix(
		"UNION ALL SELECT "+doltColumns+" FROM issues WHERE status = 'in_progress' AND priority < ?"+
			" UNION ALL SELECT "+doltColumns+" FROM wisps WHERE priority = ?"+
			" UNION ALL SELECT "+doltColumns+" FROM wisps WHERE status = 'in_progress' AND priority < ?", top, top, top)
}

// doltLabels is the labels of issues and wisps.
const doltLabels = `(SELECT issue_id, label FROM labels UNION ALL SELECT issue_id, label FROM wisp_labels)`

// doltDeferredChildren lists the children of a parent deferred beyond ?,
// as bd's getChildrenOfDeferredParentsInTx does: parent-child edges of
// issues and of wisps, to a parent issue or wisp (four ? for the time).
const doltDeferredChildren = `SELECT d.issue_id FROM dependencies d JOIN issues p ON p.id = d.depends_on_issue_id WHERE d.type = 'parent-child' AND p.defer_until > ?
	UNION ALL SELECT d.issue_id FROM dependencies d JOIN wisps p ON p.id = d.depends_on_wisp_id WHERE d.type = 'parent-child' AND p.defer_until > ?
	UNION ALL SELECT d.issue_id FROM wisp_dependencies d JOIN issues p ON p.id = d.depends_on_issue_id WHERE d.type = 'parent-child' AND p.defer_until > ?
	UNION ALL SELECT d.issue_id FROM wisp_dependencies d JOIN wisps p ON p.id = d.depends_on_wisp_id WHERE d.type = 'parent-child' AND p.defer_until > ?`

// doltLeaseExpired is true for an in_progress issue i whose holder's
// lease, in bd's leases table, has ended at now: the issue may be taken
// over, as on SQLite, at its expiry (bd reclaim waits for twice the TTL).
func doltLeaseExpired(now time.Time) sq.Sqlizer {
	return sq.Expr("(i.status = 'in_progress' AND EXISTS (SELECT 1 FROM leases l WHERE l.issue_id = i.id AND l.holder = i.assignee AND l.lease_expires_at <= ?))", now.UTC())
}

// doltCodes are bd-claim's codes for the kinds of a Dolt server's errors,
// and what to do.
var doltCodes = map[dolt.Kind]struct {
	code Code
	what string
}{
	dolt.LoginRefused:    {EAccess, "the Dolt server refused the login: check the user (BEADS_DOLT_SERVER_USER) and the password (BEADS_DOLT_PASSWORD or bd's credentials file)"},
	dolt.WriteDenied:     {EAccess, "the Dolt server does not let this user write (a read-only user can only --dry-run)"},
	dolt.NoDatabase:      {EDBNotFound, "no such database on the Dolt server (bd-claim never creates one): check dolt_database in metadata.json or BEADS_DOLT_SERVER_DATABASE"},
	dolt.Conflict:        {EBusy, "other writers kept changing the same issues; retry"},
	dolt.Unreachable:     {EUnavailable, "the Dolt server cannot be reached: is `dolt sql-server` running at the host and port the workspace names? retry later"},
	dolt.EngineLocked:    {EBusy, "another process (bd, bd-claim, a dolt sql-server) kept the embedded Dolt database open past the timeout; retry, or raise --timeout-ms"},
	dolt.MaintenanceHeld: {EUnavailable, "bd is running a maintenance command on the workspace (bd init, bd migrate, bd backup restore); retry once it has finished"},
	dolt.NotBuiltIn: {ESchema, "the workspace is an embedded Dolt workspace (bd v1.3's default), which needs bd-claim's embedded build: " +
		"download its release archive, bd-claim_VERSION_OS_ARCH_embedded, from https://github.com/bdclaim/bd-claim/releases, " +
		"or, with gcc, run `CGO_ENABLED=1 go install -tags embedded,gms_pure_go github.com/bdclaim/bd-claim@latest`"},
	dolt.ProxyDown: {EUnavailable, "the workspace is in proxied-server mode, and its proxy is not running (bd stops it after 30 s without clients unless told otherwise) or does not prove to be the workspace's; " +
		"bd-claim never starts it, nor dials the server behind it: run any bd command in the workspace (`bd list`), which starts (or replaces) it, and retry; " +
		"to keep it running, make the workspace with `bd init --proxied-server --proxied-server-idle-timeout 0`"},
}

func (e *doltEngine) code(err error) (Code, string, bool) {
	c, ok := doltCodes[dolt.KindOf(err)]
	return c.code, c.what, ok
}

// doltClaimState reads who holds issue id, as a claimEvent: the claim's
// id is the issue's row_lock, renewed by every change of owner; the lease
// is the leases row of the holder. An id that is not in issues is looked
// up in wisps, as bd's GetIssueInTx does; a wisp has no lease.
func (t *doltTx) claimState(id string) (claimEvent, error) {
	st, err := t.dq.IssueClaimState(t.ctx, t.conn, id)
	if ok, err := found(err); err != nil || ok {
		return t.claimOf(st), err
	}
	w, err := t.dq.WispClaimState(t.ctx, t.conn, id)
	if ok, err := found(err); err != nil {
		return claimEvent{}, err
	} else if !ok {
		return claimEvent{}, t.notFound(id)
	}
	return wispClaim(w.ID, w.Status, w.Assignee, w.RowLock), nil
}

// wispClaim is the claim of a wisp: its holder and row_lock, never a lease.
func wispClaim(id, status, holder string, rowLock int64) claimEvent {
	return claimEvent{IssueID: id, Status: status, Holder: holder, ID: claimIDOf(rowLock), leaseless: true}
}

// doltClaim is the claim of an issue read by IssueClaimState: its lease
// counts when the leases row is the assignee's, the issue in_progress (bd
// leaves a stale row on an issue it reopens); the claim's time is the
// lease's grant.
func (t *doltTx) claimOf(st doltdb.IssueClaimStateRow) claimEvent {
	c := claimEvent{IssueID: st.ID, Status: st.Status, Holder: st.Assignee, ID: claimIDOf(st.RowLock)}
	if st.Holder.Valid && st.Holder.String == st.Assignee && st.Status == "in_progress" {
		c.Actor = st.Holder.String
		c.At = st.GrantedAt.Time.UTC().Format(doltTime)
		c.Until = st.LeaseExpiresAt.Time.UTC().Format(leaseTime)
		c.Expired = !st.LeaseExpiresAt.Time.After(t.now)
		c.length = st.LeaseExpiresAt.Time.Sub(st.HeartbeatAt.Time)
	}
	return c
}

// doltHeld lists every in_progress issue and wisp with its claim, by
// holder then id, in the transaction's snapshot (one statement). A wisp's
// claim has no lease; its time is that of its claimed event.
func (t *doltTx) held() ([]claimEvent, error) {
	raw, err := t.dq.IssueInProgressClaims(t.ctx, t.conn)
	if err != nil {
		return nil, err
	}
	var rows []struct {
		ID, Status, Assignee string
		RowLock              int64 `json:"row_lock,string"`
		Holder               *string
		LeaseExpiresAt       *time.Time `json:"lease_expires_at"`
		HeartbeatAt          *time.Time `json:"heartbeat_at"`
		GrantedAt            *time.Time `json:"granted_at"`
		Wisp                 bool
		ClaimedAt            *time.Time `json:"claimed_at"`
	}
	if err := json.Unmarshal([]byte(raw), &rows); err != nil {
		return nil, fmt.Errorf("the claims of the in_progress issues: %w", err)
	}
	out := make([]claimEvent, len(rows))
	for i, r := range rows {
		if r.Wisp {
			out[i] = wispClaim(r.ID, r.Status, r.Assignee, r.RowLock)
			if r.ClaimedAt != nil {
				out[i].At = r.ClaimedAt.UTC().Format(doltTime)
			}
			continue
		}
		st := doltdb.IssueClaimStateRow{ID: r.ID, Status: r.Status, Assignee: r.Assignee, RowLock: r.RowLock}
		if r.Holder != nil {
			st.Holder = sql.NullString{String: *r.Holder, Valid: true}
			st.LeaseExpiresAt = sql.NullTime{Time: *r.LeaseExpiresAt, Valid: true}
			st.HeartbeatAt = sql.NullTime{Time: *r.HeartbeatAt, Valid: true}
			st.GrantedAt = sql.NullTime{Time: *r.GrantedAt, Valid: true}
		}
		out[i] = t.claimOf(st)
	}
	slices.SortFunc(out, func(a, b claimEvent) int {
		return cmp.Or(cmp.Compare(a.Holder, b.Holder), cmp.Compare(a.IssueID, b.IssueID))
	})
	return out, nil
}

// doltTake writes claim c as `bd update --claim` does: the five issues
// cells under a compare-and-swap on row_lock, the lease (bd's 5 minutes
// unless req asks for another), the claimed event. The new row_lock is the
// claim's id. The Dolt commit follows the SQL commit (doltCommit).
//
// A wisp (bd's wisps table) is claimed as bd's ClaimIssueInTx routes it:
// the same cells of the wisps row, no lease (bd never leases a wisp, so
// --lease is ignored), the claimed event in wisp_events. Its Dolt commit
// finds nothing staged (the wisp tables are dolt_ignored), as bd's does.
func (t *doltTx) take(c choice, req Request) (Result, error) {
	res := c.result()
	table := doltSnapshotOf(c.r).table
	if c.held != nil {
		// A re-claim writes nothing but the lease it asks for; its Dolt
		// commit records the claim if the first run's commit was lost.
		t.commit = "bd: update " + req.ID
		if req.Lease > 0 && table.Leased() {
			res.Lease = newLease(t.now, req.Lease)
			return res, t.lease(req.ID, req.Agent, res.Lease.Until)
		}
		return res, nil
	}
	if c.tookOver != nil {
		if err := t.txn.expire(c.r, req.Agent, *c.tookOver, "taken over by "+req.Agent); err != nil {
			return Result{}, err
		}
	}
	lock := newRowLock()
	set := doltdb.IssueClaimSetParams{
		Assignee: text(req.Agent), Now: t.now, StartedAt: sql.NullTime{Time: t.now, Valid: true},
		NewRowLock: lock, ID: c.r.ID, RowLock: doltSnapshotOf(c.r).rowLock,
	}
	n, err := table.ClaimSet(t.ctx, t.conn, set)
	if err == nil && n != 1 {
		err = errChanged
	}
	if err != nil {
		return Result{}, err
	}
	if table.Leased() {
		res.Lease = newLease(t.now, cmp.Or(req.Lease, doltLease))
		if err := t.lease(c.r.ID, req.Agent, res.Lease.Until); err != nil {
			return Result{}, err
		}
	}
	old := doltSnapshotOf(c.r).eventJSON(req.ID == "" || t.style.updateLabels)
	if err := table.InsertEvent(t.ctx, t.conn, dolt.ClaimedEvent(c.r.ID, req.Agent, old, t.now)); err != nil {
		return Result{}, err
	}
	res.ClaimID = lock
	t.landed = &landed{id: c.r.ID, rowLock: lock}
	res.Issue.Status, res.Issue.Assignee = "in_progress", req.Agent
	res.Issue.UpdatedAt = doltAt(t.now)
	t.commit = "bd: claim ready " + c.r.ID // bd's message for the same move
	if req.ID != "" {
		t.commit = "bd: update " + c.r.ID
	}
	return res, nil
}

// doltLease grants agent's lease of issue id until until (bd's
// UpsertLeaseInTx; granted_node ” as bd writes it without node_id).
func (t *doltTx) lease(id, agent string, until time.Time) error {
	return t.dq.LeaseUpsert(t.ctx, t.conn, doltdb.LeaseUpsertParams{
		IssueID: id, Holder: agent, GrantedAt: t.now, LeaseExpiresAt: until, HeartbeatAt: t.now,
	})
}

// event appends an event to table's events (dolt.Table.InsertEvent),
// dated now truncated to the second as bd binds it.
func (t *doltTx) event(table dolt.Table, id, eventType, actor string, oldValue, newValue, comment sql.NullString) error {
	return table.InsertEvent(t.ctx, t.conn, dolt.Event{IssueID: id, Type: eventType, Actor: actor,
		OldValue: oldValue, NewValue: newValue, Comment: comment, CreatedAt: t.now.UTC().Truncate(time.Second)})
}

// write is Dolt's frame: fn runs on a writer's connection of the Store's
// own that holds the writers' lock (doltWriter), in a transaction tried
// again after a serialization failure or a compare-and-swap that matched
// nothing (the clock read anew each try). A COMMIT whose answer was lost
// is looked up (landed): a write that landed is reported as one. Then the
// Dolt commit that bd makes for the same move (doltTx.commit) follows on
// the writer's connection; a claim is reported only once it is in HEAD.
func (e *doltEngine) write(ctx context.Context, doing string, _ deck, fn func(*txn) error) error {
	w, err := e.link.writer(ctx, e.wrap)
	if err != nil {
		return err
	}
	defer func() { w.done() }()
	var x *doltTx
	t, err := e.tx(ctx, w, e.retry, doltRetryable, func(t *txn) error {
		x = t.x.(*doltTx)
		x.queued = w.queued
		err := fn(t)
		if err == nil && w.inTx {
			// It commits the transaction too: both land, or neither.
			if err = x.doltCommit(ctx, t.conn, true); err != nil {
				err = fmt.Errorf("commit: %w", err) // a lost answer is looked up as a COMMIT's
			}
		}
		return err
	})
	if err != nil && x != nil && x.landed != nil && lostCommit(err) {
		if err = e.landed(ctx, x, err); err == nil {
			// It landed, but its connection is gone (and with it the
			// lock): the Dolt commit needs a writer's connection again.
			w.done()
			w, err = e.link.writer(ctx, e.wrap)
		}
	}
	if err != nil {
		return err
	}
	t.done()
	if w.inTx {
		return nil
	}
	if err := x.doltCommit(ctx, w.h, false); err != nil {
		err = e.classify(err, doing)
		var ce *Error
		if errors.As(err, &ce) {
			ce.Message += "; the change is committed in SQL and the next bd or bd-claim write records it in a Dolt commit"
		}
		return err
	}
	return nil
}

// doltCommit makes the Dolt commit bd makes for the write on h (inside
// its transaction when inTx): the message of its move (doltTx.commit),
// else of the expired claims it ended (bd reclaim's); none for a write bd
// makes none for (a heartbeat).
func (x *doltTx) doltCommit(ctx context.Context, h db.DBTX, inTx bool) error {
	message, by := x.commit, x.style.doltCommitter
	if x.swept {
		by = x.style.swept
	}
	if message == "" && len(x.reclaimed) > 0 {
		message, by = x.style.reclaim(x.reclaimed, x.reclaimer), x.style.swept
	}
	if message == "" {
		return nil
	}
	return dolt.Commit{Message: message, Author: by.author, All: by.all, Labels: x.labels, InTx: inTx}.Make(ctx, h)
}

// ahead: a Dolt claim reads its candidates in its transaction, on the
// server, where the writers' lock makes the other bd-claim writers wait.
func (e *doltEngine) ahead(context.Context, Request) ([]string, deck, error) { return nil, deck{}, nil }

func (e *doltEngine) bind(t *txn, tx *sql.Tx) engineTx {
	t.on(tx)
	return &doltTx{txn: t, dq: e.dq, style: e.style}
}

// on is an operation of the engine on h, outside a write transaction.
func (e *doltEngine) on(ctx context.Context, h db.DBTX) *txn {
	t := e.newTxn(ctx)
	t.on(h)
	t.x = &doltTx{txn: t, dq: e.dq, style: e.style}
	return t
}

// look runs fn on the database, opened for it (doltLink.open).
func (e *doltEngine) look(ctx context.Context, fn func(*txn) error) error {
	conn, end, err := e.link.open(ctx)
	if err != nil {
		return err
	}
	defer end()
	return fn(e.on(ctx, conn))
}

// snapshot is a transaction: Dolt's snapshot isolation.
func (e *doltEngine) snapshot(ctx context.Context, fn func(*txn) error) error {
	conn, end, err := e.link.open(ctx)
	if err == nil {
		defer end()
		var tx *sql.Tx
		if tx, err = conn.BeginTx(ctx, nil); err == nil {
			defer tx.Rollback()
			err = fn(e.on(ctx, tx))
		}
	}
	return err
}

// watch is the link's change signal.
func (e *doltEngine) watch(ctx context.Context) (func() string, func(), error) {
	return e.link.watch(ctx, e)
}

// doltTx is one transaction on a Dolt workspace, and what its write
// leaves for the frame: the Dolt commit to make after the SQL commit, and
// how to tell whether the write landed when its COMMIT's answer was lost.
type doltTx struct {
	*txn
	dq     *doltdb.Queries
	commit string // the message of the Dolt commit that follows the SQL commit ("" for none)
	// reclaimed lists the issues whose expired claims the write ended: a
	// reap's commit message, bd reclaim's, when no other move names the
	// commit.
	reclaimed []string
	reclaimer string // the actor that ended them
	// swept: the commit is the one bd makes after a release (doltStyle.swept).
	swept  bool
	style  doltStyle
	landed *landed // the write's mark, to look it up after a lost COMMIT
	labels bool    // the write changed labels, which the Dolt commit stages too
	queued bool    // the write waited for other writers (doltWriter.queued)
	// top is the most urgent priority of an open issue or wisp in the
	// snapshot (narrow reads it; not Valid before, or when none is open).
	top sql.NullInt64
}

func (t *doltTx) labelSet(id, label string, add bool) (int64, error) {
	if add {
		return t.dq.LabelAdd(t.ctx, t.conn, doltdb.LabelAddParams{IssueID: id, Label: label})
	}
	return t.dq.LabelRemove(t.ctx, t.conn, doltdb.LabelRemoveParams{IssueID: id, Label: label})
}

// labelled records a label change as bd's label command does: the event,
// and the labels table staged in the Dolt commit, with bd's message unless
// the write has one already (a release's covers it).
func (t *doltTx) labelled(r *row, actor, verb, event, comment string) error {
	t.labels = true
	if t.commit == "" {
		t.commit = t.style.label(verb, r.ID)
	}
	return t.event(dolt.Table{}, r.ID, event, actor, sql.NullString{}, sql.NullString{}, text(comment))
}

// comment adds none: the events' comments carry bd-claim's notes on Dolt
// (bd v1.3's comments need ids and times of their own that bd-claim does
// not reproduce yet).
func (t *doltTx) comment(string, string, string) error { return nil }

// resetMark is the commented event alone (events are not versioned).
func (t *doltTx) resetMark(r *row, actor, comment string) error {
	return t.event(dolt.Table{}, r.ID, "commented", actor, sql.NullString{}, sql.NullString{}, text(comment))
}

func (t *doltTx) eventCounts(since time.Time) (EventCounts, error) {
	ev, err := t.dq.EventCountsSince(t.ctx, t.conn, doltdb.EventCountsSinceParams{Since: since.UTC(), Failed: text(like(failedPrefix))})
	return EventCounts{int(ev.Claims), int(ev.Releases), int(ev.Failures), int(ev.Reclaims), int(ev.Closes)}, err
}

// newRowLock is a fresh row_lock as bd makes one (8 random bytes as a
// little-endian int64, never 0), kept positive: it is the claim's id,
// which the JSON contract promises to be a positive number.
func newRowLock() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return claimIDOf(int64(binary.LittleEndian.Uint64(b[:])))
}

// claimIDOf is the claim id of an issue whose row_lock is v: v with its
// sign bit cleared (bd's own row_locks are negative half the time), 1
// for 0.
func claimIDOf(v int64) int64 { return max(v&math.MaxInt64, 1) }

// errChanged is a compare-and-swap that matched no row: the issue changed
// since this transaction's snapshot. The whole transaction is tried again,
// as after a serialization failure.
var errChanged = errors.New("the issue changed under the claim")

// doltRetryable says which write errors are worth another try on Dolt.
func doltRetryable(err error) bool { return dolt.IsConflict(err) || errors.Is(err, errChanged) }

func (t *doltTx) heldCount(agent string) (int64, error) {
	return t.dq.IssueHeldCount(t.ctx, t.conn, doltdb.IssueHeldCountParams{Agent: text(agent)})
}

func (t *doltTx) customTypes() ([]string, error) {
	v, err := t.dq.CustomTypes(t.ctx, t.conn)
	return []string{v.TableTypes, v.ConfigTypes}, err
}

// narrow leaves the deferred-parent rule out of spec when no issue or
// wisp is deferred beyond now (it cannot refuse anything then): planning
// that rule was a third of the claim query's server time (BENCHMARKS.md).
// The same statement reads the most urgent priority of an open issue or
// wisp, where next starts (top). It runs in the claim's transaction, so it
// sees the same snapshot.
func (t *doltTx) narrow(spec readySpec) (readySpec, error) {
	b, err := t.dq.IssueReadyBounds(t.ctx, t.conn, doltdb.IssueReadyBoundsParams{Now: sql.NullTime{Time: t.now.UTC().Truncate(time.Second), Valid: true}})
	if b.Deferred == 0 {
		spec = spec.without(func(r rule) bool { return r.name == "deferred_parent" })
	}
	for _, top := range []int64{b.TopIssue, b.TopWisp} {
		if top >= 0 && (!t.top.Valid || top < t.top.Int64) {
			t.top = sql.NullInt64{Int64: top, Valid: true}
		}
	}
	return spec, err
}

// doltNext finds the issue to claim: the first candidate in claim order,
// bd ready's head, which a dry run names too. In a swarm it picks at
// random among the first doltSpread candidates that share the first one's
// priority (never a less urgent issue while a more urgent one is ready):
// when the write waited for other bd-claim writers (queued), and on a try
// after a lost race (the try before it conflicted with another writer).
// Dolt lets only one of two transactions that write the same row commit,
// and every `bd ready --claim` goes for the head: a swarm of bd-claim
// processes taking the head claim after claim, each commit shorter than
// bd's, made bd's processes lose every round until they gave up (after
// 15 s; through a proxied server under load, 7 of 8 beside 16 bd-claim
// processes, 0 of 8 alone; with the spread, 0 of 8).
//
// In the priority order it starts at the most urgent priority of an open
// issue (top, read by narrow): it looks at the issues of that priority and
// the more urgent in_progress ones (whose lease may have expired) first
// (doltSourceAt). Every other issue is less urgent, so when one of these
// passes, it heads the claim order; else the claim looks at every issue.
func (t *doltTx) next(spec readySpec, _ Request, _ []string) (string, bool, error) {
	k := doltSpread
	if t.try <= 1 && !t.queued {
		k = 1
	}
	var ids []string
	var err error
	if spec.sort == SortPriority && t.top.Valid {
		at := doltSourceAt(t.top.Int64)
		ids, err = t.candidates(spec, k, &at)
	}
	if err == nil && ids == nil {
		ids, err = t.candidates(spec, k, nil)
	}
	if err != nil || len(ids) == 0 {
		return "", false, err
	}
	return ids[mrand.IntN(len(ids))], true, nil
}

// candidates reads the first k claimable issues of spec, among the rows
// of at (nil: every row), that share the first one's priority, in claim
// order.
func (t *doltTx) candidates(spec readySpec, k int, at *sq.SelectBuilder) ([]string, error) {
	var ids []string
	var id string
	var priority, first, passes, n int
	row := func() {
		if passes == 0 {
			return
		}
		if n++; n == 1 {
			first = priority
		}
		if n <= k && priority == first {
			ids = append(ids, id)
		}
	}
	rows := 0
	dest := []any{&id, &priority, &passes}
	// First with the policy's cheap condition (readySpec.clear): an issue
	// that meets it passes the policy. Only an issue that does not, where
	// it could change the result, has the page read again with the
	// policy's rules themselves, which the server takes longer to plan.
	undecided := false
	err := t.each(spec.page(doltPage, at, spec.clear), dest, func() {
		undecided = undecided || (passes == 0 && n < k && (n == 0 || priority == first))
		row()
	})
	if err == nil && undecided {
		ids, n = nil, 0
		_, costly := spec.split()
		err = t.each(spec.page(doltPage, at, costly), dest, func() { rows++; row() })
	}
	if err == nil && n == 0 && rows == doltPage && at == nil {
		// The page is a prefix of the claim order, so what passes in it
		// comes first. Only a full page that had none looks further:
		// every issue in it is in backoff or abandoned.
		err = t.each(spec.candidates().Columns("i.priority", "1").Limit(uint64(k)), dest, row)
	}
	return ids, err
}

// doltPage is how many candidates, in claim order, a Dolt claim checks
// against the failure policy before it checks them all: each check is a
// few lookups, and on 200 candidates they took a third of the query's
// server time.
const doltPage = 32

// doltSpread is how many of the first candidates a Dolt claim picks from.
const doltSpread = 8

// doltRead reads issue id for a write: the contract's fields, and the
// row_lock and bd's JSON of the issue for the compare-and-swap and the
// event.
func (t *doltTx) read(id string) (*row, error) {
	snap, err := t.snapshotOf(id)
	if err != nil {
		return nil, err
	}
	return &row{Issue: snap.issue, engine: &snap}, nil
}

// doltSnapshotOf is what the Dolt engine read of r (doltTx.read).
func doltSnapshotOf(r *row) *doltSnapshot { return r.engine.(*doltSnapshot) }

// doltRelease ends agent's claim of r as `bd unclaim` does: back to open
// with an empty assignee (CAS on row_lock), the lease row deleted, an
// unclaimed event with comment (bd-claim's reason; NULL as bd writes it
// for none), and bd unclaim's Dolt commit (doltStyle.unclaim, swept).
//
// A wisp is released in the wisps table, its event in wisp_events, as bd
// unclaim routes it.
func (t *doltTx) unclaim(r *row, req ReleaseRequest) error {
	snap := doltSnapshotOf(r)
	if req.Failed && !snap.table.Leased() {
		return Errorf(EInvalid, "%s is a wisp (bd's wisps table): bd-claim keeps no failure history for wisps; release it without --failed", req.ID)
	}
	var comment sql.NullString
	if req.Reason != "" || req.Failed { // bd unclaim leaves it NULL
		comment = text(releaseComment(req))
	}
	lock := newRowLock()
	set := doltdb.IssueUnclaimSetParams{Now: t.now, NewRowLock: lock, ID: r.ID, RowLock: snap.rowLock}
	n, err := snap.table.UnclaimSet(t.ctx, t.conn, set)
	if err == nil && n != 1 {
		err = errChanged
	}
	if err == nil {
		err = t.dq.LeaseDelete(t.ctx, t.conn, r.ID)
	}
	if err == nil {
		newValue := `{"assignee":"","status":"open"}` // bd marshals map[string]string, keys sorted
		err = t.event(snap.table, r.ID, "unclaimed", req.Agent, text(snap.eventJSON(true)), text(newValue), comment)
	}
	t.commit, t.swept = t.style.unclaim(r.ID, req.Agent), true
	t.landed = &landed{id: r.ID, rowLock: lock}
	r.Status, r.Assignee, r.UpdatedAt = "open", "", doltAt(t.now)
	return err
}

// endClaim ends the expired claim of r by holder as `bd reclaim` does:
// back to open with a NULL assignee (CAS on row_lock), the lease row
// deleted, a lease_reclaimed event (old_value the holder, new_value ”)
// with bd-claim's note in its comment. r is read again: a takeover claims
// the issue as it now is. Its Dolt commit is the caller's.
func (t *doltTx) endClaim(r *row, actor, holder, note string) error {
	lock := newRowLock()
	n, err := t.dq.IssueReclaimSet(t.ctx, t.conn, doltdb.IssueReclaimSetParams{Now: t.now, NewRowLock: lock, ID: r.ID, RowLock: doltSnapshotOf(r).rowLock})
	if err == nil && n != 1 {
		err = errChanged
	}
	if err == nil {
		err = t.dq.LeaseDelete(t.ctx, t.conn, r.ID)
	}
	if err == nil {
		err = t.event(dolt.Table{}, r.ID, "lease_reclaimed", actor, text(holder), text(""), text(expiredPrefix+note))
	}
	if err != nil {
		return err
	}
	t.landed, t.reclaimed, t.reclaimer = &landed{id: r.ID, rowLock: lock}, append(t.reclaimed, r.ID), actor
	fresh, err := t.read(r.ID)
	if err == nil {
		*r = *fresh
	}
	return err
}

// closable refuses what bd v1.3.0's close refuses of a held issue
// (issueops.enforceClosePolicyForTargetInTx): one with open children, or
// one that is_blocked with a live direct blocker. A wisp is refused:
// bd-claim does not write a wisp's close.
func (t *doltTx) closable(id string) error {
	ref, err := t.dq.IssueCloseRefusal(t.ctx, t.conn, id)
	if ok, err := found(err); err != nil {
		return err
	} else if !ok {
		return Errorf(EInvalid, "%s is a wisp (bd's wisps table): bd-claim does not close wisps; release it and run `bd close %s`", id, id)
	}
	switch {
	case ref.OpenChildren > 0:
		return Errorf(ENotClaimable, "issue %s has %s: bd close refuses to close it until they are closed", id, plural(int(ref.OpenChildren), "open child issue"))
	case ref.Blockers != "":
		return Errorf(ENotClaimable, "issue %s is blocked by %s: bd close refuses to close it until they are closed", id, ref.Blockers)
	}
	return nil
}

// closeIssue writes actor's close of r as bd v1.3.0's close does
// (issueops.closeIssueInTx under CloseIssueCheckedInTx): both dependency
// coordination cells of its shard rewritten, the issue closed (closed_at
// and updated_at now, close_reason, closed_by_session empty: bd-claim has
// no session) with a fresh row_lock (CAS on the one read), the lease row
// deleted, a closed event (old_value ”, new_value the reason), is_blocked
// recomputed for the issues and wisps the close may unblock, and the Dolt
// commit "bd: close ID".
func (t *doltTx) closeIssue(r *row, actor, reason string) error {
	for _, tier := range []string{"dependencies", "wisp_dependencies"} {
		cell := doltdb.CoordinationTouchParams{Cell: coordinationCell(r.ID, tier), Stamp: strconv.FormatInt(newRowLock(), 10)}
		if err := t.dq.CoordinationTouch(t.ctx, t.conn, cell); err != nil {
			return err
		}
	}
	lock := newRowLock()
	n, err := t.dq.IssueCloseSet(t.ctx, t.conn, doltdb.IssueCloseSetParams{
		ClosedAt: sql.NullTime{Time: t.now, Valid: true}, Now: t.now, Reason: text(reason), Session: text(""),
		NewRowLock: lock, ID: r.ID, RowLock: doltSnapshotOf(r).rowLock,
	})
	if err == nil && n != 1 {
		err = errChanged
	}
	if err == nil {
		err = t.dq.LeaseDelete(t.ctx, t.conn, r.ID)
	}
	if err == nil {
		err = t.event(dolt.Table{}, r.ID, "closed", actor, text(""), text(reason), sql.NullString{})
	}
	if err == nil {
		err = t.unblock(r.ID)
	}
	t.commit = "bd: close " + r.ID
	t.landed = &landed{id: r.ID, rowLock: lock}
	r.Status, r.UpdatedAt = "closed", doltAt(t.now)
	return err
}

// coordinationCell is the key of bd v1.3.0's dependency coordination cell
// of issue id in tier (issueops.dependencyCoordinationKey): one of 4096
// shards, from the first 12 bits of the id's SHA-256.
func coordinationCell(id, tier string) string {
	sum := sha256.Sum256([]byte(id))
	return fmt.Sprintf("dependency-coordination/v1/%s/%03x", tier, uint16(sum[0])<<4|uint16(sum[1])>>4)
}

// unblock recomputes is_blocked after the close of issue id as bd v1.3.0
// does (AffectedByStatusChangeInTx, RecomputeIsBlockedInTxWithResult): over
// the issue, the rows blocked by or waiting on it or on its parents, and all
// their parent-child descendants, in issues and wisps (IssueCloseAffected),
// bd's mark and unmark passes until a round changes nothing (updated_at
// kept). A round is bd's passes in bd's order: issues marked, issues
// unmarked, wisps marked, wisps unmarked (was: the is_blocked that a pass
// changes), each row by its key.
func (t *doltTx) unblock(id string) error {
	raw, err := t.dq.IssueCloseAffected(t.ctx, t.conn, doltdb.IssueCloseAffectedParams{ID: id})
	var rows []struct {
		ID   string
		Wisp int64
	}
	if err == nil {
		err = json.Unmarshal([]byte(raw), &rows)
	}
	var issues, wisps []string
	for _, r := range rows {
		if r.Wisp == 1 {
			wisps = append(wisps, r.ID)
		} else {
			issues = append(issues, r.ID)
		}
	}
	issue := func(id string, was int64) (int64, error) {
		return t.dq.IssueBlockedPass(t.ctx, t.conn, doltdb.IssueBlockedPassParams{Was: was, ID: id})
	}
	wisp := func(id string, was int64) (int64, error) {
		return t.dq.WispBlockedPass(t.ctx, t.conn, doltdb.WispBlockedPassParams{Was: was, ID: id})
	}
	passes := []struct {
		ids  []string
		was  int64
		pass func(string, int64) (int64, error)
	}{{issues, 0, issue}, {issues, 1, issue}, {wisps, 0, wisp}, {wisps, 1, wisp}}
	for changed := int64(1); err == nil && changed > 0; {
		changed = 0
		for _, p := range passes {
			for _, rid := range p.ids {
				var n int64
				if err == nil {
					n, err = p.pass(rid, p.was)
				}
				changed += n
			}
		}
	}
	return err
}

// doltRenew extends agent's lease of issue id (claim c) as `bd heartbeat`
// does: by d, else by the lease's own length, else bd's 5 minutes. A
// claim without a lease row gets one (bd upserts it too). No Dolt commit:
// leases are dolt_ignored.
//
// A wisp has no lease to renew: bd heartbeat refuses it too.
func (t *doltTx) renew(id, agent string, c claimEvent, d time.Duration) (*Lease, error) {
	if c.leaseless {
		return nil, Errorf(ENotClaimable, "%s is a wisp (bd's wisps table): bd never leases a wisp, so there is no lease to renew", id)
	}
	l := newLease(t.now, cmp.Or(d, c.length, doltLease))
	n, err := t.dq.LeaseHeartbeat(t.ctx, t.conn, doltdb.LeaseHeartbeatParams{LeaseExpiresAt: l.Until, HeartbeatAt: t.now, IssueID: id, Holder: agent})
	if err == nil && n == 0 {
		err = t.lease(id, agent, l.Until)
	}
	return l, err
}

// doltAt is how bd prints a time Dolt stored: rounded to the second (a
// DATETIME(0) column rounds half up), RFC 3339 in UTC.
func doltAt(t time.Time) string { return t.UTC().Round(time.Second).Format(time.RFC3339) }

// landed identifies a write by the random row_lock it gave an issue.
type landed struct {
	id      string
	rowLock int64
}

// lostCommit is a COMMIT whose connection broke: the transaction may or
// may not have committed (bd never replays such a commit either).
func lostCommit(err error) bool {
	return strings.HasPrefix(err.Error(), "commit: ") &&
		(errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) || errors.As(err, new(*net.OpError)))
}

// landed asks the server, on another connection, whether t's write
// landed although its COMMIT's answer was lost: then the write succeeded
// (and is reported, and Dolt-committed); else err, the lost commit, stands
// and nothing was written.
func (e *doltEngine) landed(ctx context.Context, t *doltTx, err error) error {
	for look := range 2 {
		if look > 0 {
			// The server may still be running the COMMIT of the broken
			// session: look once more after a while.
			time.Sleep(200 * time.Millisecond)
		}
		conn, end, rerr := e.link.open(ctx)
		if rerr == nil {
			lock, rerr := e.dq.IssueRowLock(ctx, conn, t.landed.id)
			end()
			if rerr == nil && lock == t.landed.rowLock {
				return nil
			}
		}
	}
	return err
}

// doltSnapshot is an issue of a Dolt workspace as a write reads it: the
// contract's fields, its row_lock for the compare-and-swap, and bd's JSON
// of it for the event's old_value.
type doltSnapshot struct {
	issue   Issue
	rowLock int64
	table   dolt.Table
	bd      dolt.Issue // bd's reading of the row
}

// eventJSON is bd's JSON of the issue for an event's old_value, with its
// labels or without them.
func (s *doltSnapshot) eventJSON(labels bool) string {
	iss := s.bd
	if !labels {
		iss.Labels = nil
	}
	return iss.EventJSON()
}

func (t *doltTx) snapshotOf(id string) (doltSnapshot, error) {
	r, table, err := dolt.Snapshot(t.ctx, t.conn, id)
	if err != nil {
		return doltSnapshot{}, err
	}
	iss, err := dolt.IssueOf(r)
	if err != nil {
		return doltSnapshot{}, err
	}
	return doltSnapshot{rowLock: r.RowLock, table: table, bd: iss, issue: Issue{
		ID: iss.ID, Title: iss.Title, Status: iss.Status, Assignee: iss.Assignee, Priority: iss.Priority,
		IssueType: iss.IssueType, Labels: iss.Labels, // never nil: the query gives at least []
		ContentHash: r.ContentHash.String, ExternalRef: iss.ExternalRef,
		CreatedAt: iss.CreatedAt.Format(time.RFC3339), UpdatedAt: iss.UpdatedAt.Format(time.RFC3339),
	}}, nil
}

// page selects (id, priority, passes) of the first n issues in claim order
// by every rule but the failure policy's, which look up events: those are
// checked on these n issues only (a Dolt server would otherwise evaluate
// them on every row), and passes is 1 for an issue that meets them too.
// at, when not nil, is the rows to look at instead of every issue and
// wisp (doltSourceAt): only those are checked against the rules and
// sorted. passes is policy's verdict: the failure policy's rules, or a
// condition under which they hold (readySpec.clear).
func (s readySpec) page(n uint64, at *sq.SelectBuilder, policy sq.Sqlizer) sq.SelectBuilder {
	cheap, _ := s.split()
	b := sq.Select("i.id", "i.priority", "i.created_at").From(s.from)
	if at != nil {
		b = b.FromSelect(*at, "i")
	}
	b = b.Where(cheap).OrderByClause(s.order, s.args...).Limit(n)
	return sq.Select("i.id", "i.priority").Column(sq.Expr("CASE WHEN ? THEN 1 ELSE 0 END", policy)).
		FromSelect(b, "i").OrderByClause(s.order, s.args...)
}
