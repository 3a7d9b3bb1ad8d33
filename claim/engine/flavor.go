package engine

import (
	"time"

	sq "github.com/Masterminds/squirrel"
)

// Flavor is what package claim needs to know of a workspace's bd to build
// a readiness Spec for it, decided once when the engine opens the
// workspace: bd ready's rules there and the dialect in which the engine's
// SQL spells each filter. The rules' composition, names and order are
// package claim's (its ready.go); the pieces that depend on who wrote the
// workspace are the flavor's, so a new writer of Beads databases is a new
// flavor of an engine, not an edit of the rules.
type Flavor struct {
	Version Version  // the bd release whose writes the engine reproduces
	Kind    string   // the engine, as refusals name it: SQLite, Dolt
	Types   []string // the issue types built into the flavor's bd
	// ExcludedTypes are the types bd ready never lists (unless --type
	// asks for them).
	ExcludedTypes []string
	Source        string                           // the rows readiness ranges over, aliased i: issues (and, on Dolt, bd's wisps)
	SourceOf      func(id string) sq.SelectBuilder // Source narrowed to one id, where the server would not narrow it (nil: a WHERE on i.id does)
	Labels        string                           // the labels of those rows (issue_id, label)
	// Under is true for a row i that bd ready --parent root lists.
	Under func(root string) sq.Sqlizer
	// NotBlocked is bd's blocked rule; LeaseExpired is true, as of now,
	// for an in_progress issue i whose asked lease has ended (a takeover).
	NotBlocked   Rule
	LeaseExpired func(now time.Time) sq.Sqlizer
	// Ready are bd ready's exclusions that do not change with the clock;
	// Deferral those of defer_until as of now (the database's datetime
	// form), nil where bd has no defer_until.
	Ready    []Rule
	Deferral func(now string) []Rule
	// External is bd ready's rule on dependencies on other projects'
	// capabilities (blocks edges to external:<project>:<capability>) as
	// those projects' databases have them at the call, which reads them;
	// nil where that bd's ready never leaves an issue out for them.
	External func() []Rule
	// SameActor says whether an issue's assignee and a claim's actor name
	// one identity, as the flavor's bd compares them when it claims by id
	// (two spellings of one name); nil where only the same name does.
	SameActor func(assignee, actor string) bool
	// Glob, Regexp and Metadata are how bd ready's --label-pattern,
	// --label-regex and metadata filters read on this engine; Regexp and
	// Metadata are nil where that bd has no such filter.
	Glob     func(col, pattern string) sq.Sqlizer
	Regexp   func(col, re string) sq.Sqlizer
	Metadata *MetadataMatch
	// Hybrid is the ORDER BY clause (and its arguments) of the hybrid
	// sort as of now: recent issues (48h) by priority first, then the
	// older ones by age.
	Hybrid    func(now string) (string, []any)
	History   History // how the failure policy reads failed attempts
	EventTime string  // layout of events.created_at and of the database's datetime()
	// JSONEnvelope: what its bd prints with --json it wraps in
	// {"data": ..., "schema_version": 1} when BD_JSON_ENVELOPE=1.
	JSONEnvelope bool
	// DirectoryLabels is true where bd ready, run without a label flag,
	// scopes its list to the label that config directory.labels gives
	// the directory it runs in.
	DirectoryLabels bool
}

// MetadataMatch is how a flavor reads bd's issues.metadata (a JSON object)
// as bd ready's --has-metadata-key and --metadata-field do, for a row i.
type MetadataMatch struct {
	Has   func(key string) sq.Sqlizer        // the object has the top-level key (a JSON null counts)
	Field func(key, value string) sq.Sqlizer // the key's value, unquoted, is value
}

// JSONKey is the JSON path of a top-level metadata key, quoted as bd's
// storage.JSONMetadataPath quotes it, so that a dotted key is one key (the
// key is checked: no quote or backslash).
func JSONKey(key string) string { return `$."` + key + `"` }

// EventAt is t as the flavor writes an event's time.
func (f Flavor) EventAt(t time.Time) string { return t.UTC().Format(f.EventTime) }
