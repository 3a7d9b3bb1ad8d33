package claim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bdclaim/bd-claim/claim/engine"
)

// The requests of the claim lifecycle and their validation: the one place
// that decides what a well-formed request is. The CLI builds a request from
// its flags and calls Validate before it opens the workspace; every Store
// method calls it again before it touches the database.

// Request is one claim.
type Request struct {
	Agent   string
	Filters Filters
	ID      string // claim this issue only (compare-and-swap); "" = the next ready one
	DryRun  bool   // report what would be claimed, change nothing
	// ClaimID, with ID, fences a re-claim: it succeeds only while Agent
	// still holds the issue under this claim.
	ClaimID int64
	Lease   time.Duration // lease of the claim; 0 = none (held until released)
	MaxHeld int           // claim nothing new while Agent holds this many in_progress issues; 0 = no limit
	Wait    time.Duration // when nothing is claimable, keep watching this long
	// Resume returns, when Agent already holds an in_progress issue that
	// passes Filters, that issue (the oldest claim first) with its lease
	// renewed, and claims nothing new; otherwise the claim goes on as
	// usual. Not with ID.
	Resume bool
	// BdJSON asks for the issue as the workspace's bd prints its own claim
	// with --json too (Result.BdJSON).
	BdJSON bool
}

// Validate checks the request and normalises its filters (see
// Filters.Validate).
func (req *Request) Validate() error {
	if err := ValidateAgent(req.Agent); err != nil {
		return err
	}
	if err := req.Filters.Validate(); err != nil {
		return err
	}
	if err := checkLength("the issue id", req.ID); err != nil {
		return err
	}
	if err := checkClaimID(req.ClaimID); err != nil {
		return err
	}
	if err := checkLease(req.Lease); err != nil {
		return err
	}
	switch {
	case req.ClaimID != 0 && req.ID == "":
		return Errorf(EInvalid, "a claim id fences a re-claim of one issue: give its id too")
	case req.Resume && req.ID != "":
		return Errorf(EInvalid, "--resume with --id: --resume returns an issue you already hold, --id claims the one named (a claim of an issue you hold returns it already); give one of them")
	case req.Lease != 0 && req.DryRun:
		return Errorf(EInvalid, "--lease on a dry run: a dry run claims nothing, so it takes no lease")
	case req.MaxHeld < 0:
		return Errorf(EInvalid, "max held %d is negative", req.MaxHeld)
	}
	if err := checkDuration(req.Wait, req.Wait.String(), MaxWait, 0); err != nil {
		return Errorf(EInvalid, "--wait: %v", err)
	}
	return nil
}

// ReleaseRequest gives an issue back.
type ReleaseRequest struct {
	Agent   string
	ID      string
	ClaimID int64  // when not 0, release only while Agent holds the issue under this claim
	Reason  string // recorded in the event and, when given, as a bd comment
	Failed  bool   // the attempt failed: it counts towards backoff and abandonment
}

// Validate checks the request.
func (req ReleaseRequest) Validate() error {
	return firstError(ValidateAgent(req.Agent), validateIssueID(req.ID), validateReason(req.Reason), checkClaimID(req.ClaimID))
}

// CloseRequest closes an issue its agent holds: the end of a claim whose
// work is done.
type CloseRequest struct {
	Agent   string
	ID      string
	ClaimID int64  // when not 0, close only while Agent holds the issue under this claim
	Reason  string // the close reason ("" = bd's default, "Closed")
	DryRun  bool   // check that the close would succeed, change nothing
}

// Validate checks the request.
func (req CloseRequest) Validate() error {
	return firstError(ValidateAgent(req.Agent), validateIssueID(req.ID), validateReason(req.Reason), checkClaimID(req.ClaimID))
}

// HeartbeatRequest renews the lease of a held issue.
type HeartbeatRequest struct {
	Agent   string
	ID      string
	ClaimID int64         // when not 0, renew only while Agent holds the issue under this claim
	Lease   time.Duration // the new lease from now; 0 = the claim's current lease length
}

// Validate checks the request.
func (req HeartbeatRequest) Validate() error {
	return firstError(ValidateAgent(req.Agent), validateIssueID(req.ID), checkClaimID(req.ClaimID), checkLease(req.Lease))
}

// ResetRequest clears an issue's failure history; Actor is recorded as the
// events' actor.
type ResetRequest struct {
	Actor string
	ID    string
}

// Validate checks the request.
func (req ResetRequest) Validate() error {
	return firstError(ValidateAgent(req.Actor), validateIssueID(req.ID))
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// MaxAgentLen is the longest agent name accepted, in characters.
const MaxAgentLen = 64

// giveAgent says how to give an agent name, in the messages that refuse
// one.
const giveAgent = "pass --agent NAME or set BEADS_ACTOR (or BD_ACTOR)"

// ValidateAgent checks an agent name: non-empty, not blank, without
// leading or trailing whitespace, valid UTF-8, at most MaxAgentLen
// characters, no control characters. The name is written into
// issues.assignee and events.actor as given, so " backend-1" would be
// another agent than "backend-1".
func ValidateAgent(name string) error {
	switch {
	case name == "":
		return Errorf(EInvalid, "agent name is empty: %s", giveAgent)
	case !utf8.ValidString(name):
		return Errorf(EInvalid, "agent name is not valid UTF-8")
	case utf8.RuneCountInString(name) > MaxAgentLen:
		return Errorf(EInvalid, "agent name is %d characters long; the limit is %d", utf8.RuneCountInString(name), MaxAgentLen)
	case strings.TrimSpace(name) == "":
		return Errorf(EInvalid, "agent name %q is blank: %s", name, giveAgent)
	case strings.TrimSpace(name) != name:
		return Errorf(EInvalid, "agent name %q has leading or trailing whitespace, which would become part of the name (another agent than %q): %s, without the whitespace",
			name, strings.TrimSpace(name), giveAgent)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return Errorf(EInvalid, "agent name contains the control character %U", r)
		}
	}
	return nil
}

// MaxReasonLen is the longest release or close reason accepted, in characters.
const MaxReasonLen = 2000

func validateIssueID(id string) error {
	if strings.TrimSpace(id) == "" {
		return Errorf(EInvalid, "no issue id: --id ISSUE is required")
	}
	return checkLength("the issue id", id)
}

func validateReason(reason string) error {
	switch {
	case !utf8.ValidString(reason):
		return Errorf(EInvalid, "the reason is not valid UTF-8")
	case utf8.RuneCountInString(reason) > MaxReasonLen:
		return Errorf(EInvalid, "the reason is %d characters long; the limit is %d", utf8.RuneCountInString(reason), MaxReasonLen)
	case strings.ContainsFunc(reason, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }):
		return Errorf(EInvalid, "the reason contains a control character")
	}
	return nil
}

func checkClaimID(id int64) error {
	if id < 0 {
		return Errorf(EInvalid, "claim id %d is not a claim id (a positive number)", id)
	}
	return nil
}

// checkLease is the lease setting's rule (see settings) for a lease given
// as a duration.
func checkLease(d time.Duration) error {
	if err := checkDuration(d, d.String(), MaxLease, time.Second); err != nil {
		return Errorf(EInvalid, "--lease: %v", err)
	}
	return nil
}

// checkDuration is the one rule for every duration bd-claim takes (leases,
// waits, backoffs): 0, or from min to max. text is the duration as the
// user wrote it.
func checkDuration(d time.Duration, text string, max, min time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("%s is negative", text)
	case d > max:
		return fmt.Errorf("%s is longer than the limit of %s", text, max)
	case d != 0 && d < min:
		return fmt.Errorf("%s is shorter than %s", text, min)
	}
	return nil
}

// Filters narrow which ready issues an agent may claim. Each means what
// the same filter of `bd ready` means to the workspace's bd (the README's
// filters table); a filter the workspace's bd has no concept of is refused
// (INVALID_ARGUMENT naming that bd), never ignored.
type Filters struct {
	OnlyUnassigned bool     `json:"only_unassigned"` // skip open issues already assigned to this agent
	IncludeLabels  []string `json:"include_labels"`  // the issue has all of them
	LabelsAny      []string `json:"labels_any"`      // the issue has at least one of them (bd ready --label-any)
	ExcludeLabels  []string `json:"exclude_labels"`  // the issue has none of them
	LabelPattern   string   `json:"label_pattern"`   // a label matches this glob (* and ?), case-sensitive
	LabelRegex     string   `json:"label_regex"`     // a label matches this regular expression, unanchored
	MinPriority    *int     `json:"min_priority"`    // priority <= MinPriority (0 is the most urgent)
	Priority       *int     `json:"priority"`        // priority = Priority (bd ready --priority)
	Types          []string `json:"types"`           // issue_type is one of them
	// ExcludeTypes are types never claimed, besides those bd ready never
	// lists; as in bd, they do not apply with Types.
	ExcludeTypes   []string `json:"exclude_types"`
	HasMetadataKey string   `json:"has_metadata_key"` // the metadata has this top-level key (a JSON null counts)
	// MetadataFields are top-level metadata keys and the text their value
	// must read as (JSON_UNQUOTE: "2" matches 2 and "2"), all of them.
	MetadataFields  map[string]string `json:"metadata_fields"`
	IncludeDeferred bool              `json:"include_deferred"` // also issues deferred to the future, and children of deferred parents
	Parent          string            `json:"parent"`           // descendants of this issue through parent-child edges
	Sort            Sort              `json:"sort"`
}

// metadataKey is bd's rule for a metadata key (storage.ValidateMetadataKey):
// a dotted key names a top-level key with dots in it.
var metadataKey = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_./]*$`)

// typeAliases are the type names bd ready expands (utils.NormalizeIssueType).
var typeAliases = map[string]string{"mr": "merge-request", "feat": "feature", "mol": "molecule", "enhancement": "feature", "dec": "decision", "adr": "decision"}

// Validate checks the filters and normalises them: empty lists to [] so
// that the JSON echo of the filters is stable, and the enumerated values
// (the sort, the types) to lower case, since they are matched without
// regard to case, with bd's type aliases expanded (--exclude-type split at
// commas, as bd splits it). The sort is a closed set: an unknown one is
// refused here; an unknown type is refused by Store.admit, which knows the
// workspace's own types. Labels, types and the parent are at most
// MaxValueLen characters, as bd stores them.
func (f *Filters) Validate() error {
	f.Sort = Sort(strings.ToLower(strings.TrimSpace(string(f.Sort))))
	if f.Sort == "" {
		f.Sort = SortPriority
	}
	if err := checkLength("the parent", f.Parent); err != nil {
		return err
	}
	switch f.Sort {
	case SortPriority, SortHybrid, SortOldest:
	default:
		return Errorf(EInvalid, "unknown sort %q: use priority, hybrid or oldest", f.Sort)
	}
	var groups []string // --exclude-type takes comma-separated lists
	for _, group := range f.ExcludeTypes {
		for _, t := range strings.Split(group, ",") {
			if strings.TrimSpace(t) == "" {
				return Errorf(EInvalid, "empty type in --exclude-type %q", group)
			}
			groups = append(groups, t)
		}
	}
	f.ExcludeTypes = groups
	for _, list := range []*[]string{&f.IncludeLabels, &f.LabelsAny, &f.ExcludeLabels, &f.Types, &f.ExcludeTypes} {
		if *list == nil {
			*list = []string{}
		}
		for _, v := range *list {
			if strings.TrimSpace(v) == "" {
				return Errorf(EInvalid, "empty value in --label, --label-any, --exclude-label or --type")
			}
			if err := checkLength("a value of --label, --label-any, --exclude-label, --type or --exclude-type", v); err != nil {
				return err
			}
		}
	}
	f.Types, f.ExcludeTypes = typeNames(f.Types), typeNames(f.ExcludeTypes) // copies: the caller's slices stay as given
	for what, v := range map[string]string{"--label-pattern": f.LabelPattern, "--label-regex": f.LabelRegex, "--has-metadata-key": f.HasMetadataKey} {
		if err := checkLength(what, v); err != nil {
			return err
		}
	}
	for name, p := range map[string]*int{"min priority": f.MinPriority, "priority": f.Priority} {
		if p != nil && (*p < PriorityCritical || *p > PriorityBacklog) {
			return Errorf(EInvalid, "%s %d is outside 0-4", name, *p)
		}
	}
	if f.LabelRegex != "" {
		if _, err := regexp.Compile(f.LabelRegex); err != nil {
			return Errorf(EInvalid, "invalid --label-regex %q: %v", f.LabelRegex, err)
		}
	}
	if f.HasMetadataKey != "" && !metadataKey.MatchString(f.HasMetadataKey) {
		return Errorf(EInvalid, "invalid --has-metadata-key %q: a key must match %s", f.HasMetadataKey, metadataKey)
	}
	if f.MetadataFields == nil {
		f.MetadataFields = map[string]string{}
	}
	for _, k := range slices.Sorted(maps.Keys(f.MetadataFields)) {
		if err := checkLength("a key of --metadata-field", k); err != nil {
			return err
		}
		if !metadataKey.MatchString(k) {
			return Errorf(EInvalid, "invalid --metadata-field key %q: a key must match %s", k, metadataKey)
		}
	}
	return nil
}

// typeNames are types as bd-claim matches them: trimmed, lower case, bd's
// aliases expanded, each once.
func typeNames(list []string) []string {
	out := []string{}
	for _, t := range list {
		t = strings.ToLower(strings.TrimSpace(t))
		if alias, ok := typeAliases[t]; ok {
			t = alias
		}
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// ParseMetadataField reads one --metadata-field: key=value, split at the
// first = as bd splits it (the value may be empty or hold more =).
func ParseMetadataField(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return "", "", Errorf(EInvalid, "invalid --metadata-field %q: expected key=value", s)
	}
	return k, v, nil
}

// parseTypes reads a types.custom value as bd does
// (issueops.ParseTypesConfigValue): a JSON array of names, else a
// comma-separated list.
func parseTypes(v string) []string {
	var list []string
	if json.Unmarshal([]byte(v), &list) != nil {
		list = strings.Split(v, ",")
	}
	var out []string
	for _, t := range list {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// yamlCustomTypes is types.custom of the workspace's config.yaml (in
// beadsDir; nested or written types.custom; a list or a comma-separated
// string), which bd adds to the database's; none when the file or the key
// is missing or unreadable.
func yamlCustomTypes(beadsDir string) []string {
	switch v := engine.ConfigValue(beadsDir, "types.custom").(type) {
	case string:
		return parseTypes(v)
	case []any:
		var out []string
		for _, t := range v {
			out = append(out, parseTypes(fmt.Sprint(t))...)
		}
		return out
	}
	return nil
}

// MaxValueLen is the longest issue id, label, type or parent accepted, in
// characters: bd's columns are VARCHAR(255) on Dolt.
const MaxValueLen = 255

// checkLength refuses a value longer than MaxValueLen, without echoing it.
func checkLength(what, v string) error {
	if n := utf8.RuneCountInString(v); n > MaxValueLen {
		return Errorf(EInvalid, "%s is %d characters long; the limit is %d", what, n, MaxValueLen)
	}
	return nil
}

// refuse says which of fs the workspace's bd has no concept of (nil when
// it has every one): bd-claim refuses such a filter rather than ignore it.
func (s *Store) refuseFilters(fs Filters) error {
	f := s.flavor
	var missing []string
	if fs.LabelRegex != "" && f.Regexp == nil {
		missing = append(missing, "--label-regex (no REGEXP in its database)")
	}
	if (fs.HasMetadataKey != "" || len(fs.MetadataFields) > 0) && f.Metadata == nil {
		missing = append(missing, "--has-metadata-key and --metadata-field (no issues.metadata column)")
	}
	if fs.IncludeDeferred && f.Deferral == nil {
		missing = append(missing, "--include-deferred (no defer_until)")
	}
	if len(missing) > 0 {
		return Errorf(EInvalid, "the workspace's bd %s (%s) has no such filter: %s", f.Version, f.Kind, strings.Join(missing, "; "))
	}
	return nil
}

// knownType says whether t is a type the workspace's bd builds in, or one
// of custom, in any case.
func (s *Store) knownType(t string, custom []string) bool {
	same := func(u string) bool { return strings.EqualFold(u, t) }
	return slices.ContainsFunc(s.flavor.Types, same) || slices.ContainsFunc(s.flavor.ExcludedTypes, same) || slices.ContainsFunc(custom, same)
}

// admit checks a claim request (Validate: req is normalized in place),
// then refuses filters the workspace cannot apply as its bd does: one its
// bd has no concept of (refuseFilters), a --type or --exclude-type that is
// neither a type its bd builds in nor one of the workspace's custom types
// (in the database, or types.custom of .beads/config.yaml). It reads no
// issue.
func (s *Store) admit(ctx context.Context, req *Request) error {
	if err := req.Validate(); err != nil {
		return err
	}
	f := req.Filters
	if err := s.refuseFilters(f); err != nil || len(f.Types)+len(f.ExcludeTypes) == 0 {
		return err
	}
	var lists []string
	err := s.look(ctx, "read the custom types", func(tx engine.Tx) error {
		var err error
		lists, err = tx.CustomTypes()
		return err
	})
	if err != nil {
		return err
	}
	custom := yamlCustomTypes(s.Workspace.BeadsDir)
	for _, l := range lists {
		custom = append(custom, parseTypes(l)...)
	}
	for _, t := range slices.Concat(f.Types, f.ExcludeTypes) {
		if !s.knownType(t, custom) {
			flag := "--exclude-type"
			if slices.Contains(f.Types, t) {
				flag = "--type"
			}
			return Errorf(EInvalid, "unknown %s %q: not a type bd %s builds in, nor one of the workspace's types.custom", flag, t, s.flavor.Version)
		}
	}
	return nil
}
