package dolt

import (
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// flavor is bd v1.3.0's `bd ready` (sqlbuild.BuildReadyWorkWhere):
// status open, not pinned, is_blocked = 0, not ephemeral, not one of the
// infrastructure types, not deferred, not a child of a deferred parent.
// bd ready lists the rows of its wisps table that pass the same rules
// (getReadyWispsInTx: the `--no-history` ones, as ephemeral wisps fail
// the ephemeral rule), merged with the issues and sorted again: the
// readiness rules range over both tables at once (doltSource).
var flavor = engine.Flavor{
	Version: engine.Version{1, 3, 0}, Kind: "Dolt", EventTime: doltTime, Deferral: doltDeferral, Hybrid: doltHybrid,
	Under: doltUnder, History: history, Source: doltSource, SourceOf: doltSourceOf, Labels: doltLabels,
	NotBlocked:   engine.Rule{Name: "blocked", Reason: "it is blocked by an open dependency (is_blocked)", Pred: sq.Expr("i.is_blocked = 0")},
	LeaseExpired: doltLeaseExpired, DirectoryLabels: true,
	SameActor: sameActor,
	Ready: []engine.Rule{
		{Name: "pinned", Reason: "it is pinned", Pred: sq.Expr("(i.pinned = 0 OR i.pinned IS NULL)")},
		{Name: "ephemeral", Reason: "it is ephemeral (a wisp)", Pred: sq.Expr("(i.ephemeral = 0 OR i.ephemeral IS NULL)")},
	},
	ExcludedTypes: []string{"merge-request", "gate", "molecule", "rig", "agent", "role", "message"},
	Glob:          doltGlob, Regexp: doltRegexp, Metadata: &doltMetadata,
	Types:        []string{"bug", "feature", "task", "epic", "chore", "decision", "message", "molecule", "gate", "spike", "story", "milestone", "event"},
	JSONEnvelope: true, // cmd/bd/output.go
}

// history is how Dolt's events record the failure policy's attempts: a
// failed release is bd unclaim's unclaimed event, and events (UUIDs) are
// ordered by created_at, whole seconds: a failure recorded in the same
// second as a reset, after it, does not count.
var history = engine.NewHistory("unclaimed", "created_at", "'1970-01-01 00:00:00'", "TIMESTAMPDIFF(SECOND, '1970-01-01 00:00:00', %s)", "LEAST")

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
var doltMetadata = engine.MetadataMatch{
	Has: func(key string) sq.Sqlizer {
		return sq.Expr("JSON_EXTRACT(i.metadata, ?) IS NOT NULL", engine.JSONKey(key))
	},
	Field: func(key, value string) sq.Sqlizer {
		return sq.Expr("JSON_UNQUOTE(JSON_EXTRACT(i.metadata, ?)) = ?", engine.JSONKey(key), value)
	},
}

// doltDeferral is bd v1.3.0's defer_until rules: the issue's own, and its
// parent's (getChildrenOfDeferredParentsInTx).
func doltDeferral(now string) []engine.Rule {
	return []engine.Rule{{Name: "deferred", Reason: "it is deferred (defer_until is in the future)", Pred: sq.Expr("(i.defer_until IS NULL OR i.defer_until <= ?)", now)},
		{Name: "deferred_parent", Reason: "its parent is deferred (defer_until is in the future)", Pred: sq.Expr(`i.id NOT IN (`+doltDeferredChildren+`)`, now, now, now, now)}}
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

// doltLeaseExpired is true for an in_progress issue i whose holder asked
// bd-claim for its lease (its claim event's comment holds it) and whose
// lease, in bd's leases table, has ended at now: the issue may be taken
// over, as on SQLite, at its expiry. bd's own lease, which every claim
// carries, never hands an issue to another claim: bd reclaim (and reap
// --older-than) recover it, past a grace window.
func doltLeaseExpired(now time.Time) sq.Sqlizer {
	return sq.Expr("(i.status = 'in_progress' AND EXISTS (SELECT 1 FROM leases l WHERE l.issue_id = i.id AND l.holder = i.assignee AND l.lease_expires_at <= ?) AND "+
		doltAskedLease+")", now.UTC(), doltAskedPattern)
}

// doltAskedLease is true when issue i's holder asked bd-claim for the lease
// of its current claim: a claimed event of the holder's records it, naming
// the claim's row_lock (Lease.claimOf), so that an earlier claim of the
// same second does not count. IssueClaimState and IssueInProgressClaims
// (sql/dolt/queries/issues.sql) read the same event; its ? is
// doltAskedPattern.
const doltAskedLease = `EXISTS (SELECT 1 FROM events e WHERE e.issue_id = i.id AND e.event_type = 'claimed' AND e.actor = i.assignee
        AND e.comment LIKE CONCAT(?, i.row_lock))`

// doltAskedPattern is the LIKE pattern, less the row_lock, of an asked
// lease's comment (Lease.claimOf).
const doltAskedPattern = engine.LeasePrefix + "%" + engine.ClaimMark

// doltColumns are the columns of doltSource.
const doltColumns = "id, status, assignee, priority, issue_type, created_at, is_blocked, pinned, ephemeral, defer_until, metadata, row_lock"
