package claim

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Sort is the order in which ready issues are handed out.
type Sort string

// The sort policies. SortPriority is bd-claim's default; SortHybrid and
// SortOldest reproduce `bd ready --sort hybrid|oldest`.
const (
	SortPriority Sort = "priority" // priority ASC, created_at ASC, id ASC
	SortHybrid   Sort = "hybrid"   // issues created in the last 48h by priority, then older ones by age
	SortOldest   Sort = "oldest"   // created_at ASC, id ASC
)

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

// admit refuses filters the workspace cannot apply as its bd does: one its
// bd has no concept of (flavor.refuse), a --type or --exclude-type that is neither a
// type its bd builds in nor one of the workspace's custom types (in the
// database, or types.custom of .beads/config.yaml). It reads no issue.
func (s *Store) admit(ctx context.Context, f Filters) error {
	if err := s.flavor.refuse(f); err != nil || len(f.Types)+len(f.ExcludeTypes) == 0 {
		return err
	}
	var lists []string
	err := s.look(ctx, "read the custom types", func(t *txn) error {
		var err error
		lists, err = t.x.customTypes()
		return err
	})
	if err != nil {
		return err
	}
	custom := yamlCustomTypes(filepath.Join(s.Workspace.BeadsDir, "config.yaml"))
	for _, l := range lists {
		custom = append(custom, parseTypes(l)...)
	}
	for _, t := range slices.Concat(f.Types, f.ExcludeTypes) {
		if !s.flavor.knownType(t, custom) {
			flag := "--exclude-type"
			if slices.Contains(f.Types, t) {
				flag = "--type"
			}
			return Errorf(EInvalid, "unknown %s %q: not a type bd %s builds in, nor one of the workspace's types.custom", flag, t, s.flavor.version)
		}
	}
	return nil
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

// yamlCustomTypes is types.custom of a config.yaml (nested or written
// types.custom; a list or a comma-separated string), which bd adds to the
// database's; none when the file or the key is missing or unreadable.
func yamlCustomTypes(path string) []string {
	data, _ := os.ReadFile(path)
	var doc map[string]any
	_ = yaml.Unmarshal(data, &doc)
	v, ok := doc["types.custom"]
	if nested, isMap := doc["types"].(map[string]any); isMap && !ok {
		v = nested["custom"]
	}
	switch v := v.(type) {
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
