package claim

import (
	"cmp"
	"slices"
	"strings"
)

// An issue id may be given short, as bd takes it (utils.ResolvePartialID):
// without the workspace's prefix ("wq8" for "fx-wq8"), or as the start of
// its hash ("a3f" for "fx-a3f8e9"). Every command that takes --id resolves
// it this way when no issue has exactly that id; the result, and every
// message after it, name the whole id.

// state reads the claim state of issue *id (engineTx.claimState), first
// resolving *id as bd resolves a partial id when no issue has exactly that
// id: *id is then the whole id. An id that names several issues is refused
// (ISSUE_NOT_FOUND), listing them.
func (t *txn) state(id *string) (claimEvent, error) {
	c, err := t.x.claimState(*id)
	if ErrorCode(err) != ENotFound {
		return c, err
	}
	whole, rerr := t.resolve(*id)
	if rerr != nil || whole == "" {
		return c, cmp.Or(rerr, err)
	}
	*id = whole
	return t.x.claimState(whole)
}

// resolve is the issue that the partial id input names ("" for none): the
// one whose id is the workspace's prefix and input, else the one whose hash
// (the id after its prefix) is input or starts with it.
func (t *txn) resolve(input string) (string, error) {
	part, ok := partialIDPart(input)
	if !ok {
		return "", nil
	}
	prefix, ids, err := t.x.lookalikes(part)
	if err != nil {
		return "", err
	}
	id, matches := resolvePartialID(input, cmp.Or(prefix, "bd"), ids)
	if len(matches) > 1 {
		return "", Errorf(ENotFound, "no issue %s, and %q is the start of %d issue ids: %s; give more of the id", input, input, len(matches), strings.Join(matches, ", "))
	}
	return id, nil
}

// resolvePartialID picks, among ids (every id containing the part of input
// that partialIDPart chose), the one that input names in a workspace whose
// issue prefix is prefix, as bd v1.3.0's ResolvePartialID does: an id that
// is input, or input with the prefix added, first; else one whose hash is
// input's; else the ones whose hash starts with it: matches lists them,
// sorted, and id is set only when there is one.
func resolvePartialID(input, prefix string, ids []string) (id string, matches []string) {
	p := strings.TrimSuffix(prefix, "-") + "-"
	normalized := input
	if !strings.HasPrefix(input, p) && !looksPrefixed(input) {
		normalized = p + input
	}
	hash := strings.TrimPrefix(normalized, p)
	exact := ""
	for _, candidate := range ids {
		if candidate == input || candidate == normalized {
			return candidate, nil
		}
		h := candidate
		if rest, ok := strings.CutPrefix(candidate, p); ok {
			h = rest
		} else if _, rest, ok := strings.Cut(candidate, "-"); ok {
			h = rest
		}
		wisp := strings.TrimPrefix(h, "wisp-") // a wisp's id is <prefix>-wisp-<hash>
		switch {
		case h == hash || wisp == hash:
			exact = candidate
		case strings.HasPrefix(h, hash) || strings.HasPrefix(wisp, hash):
			matches = append(matches, candidate)
		}
	}
	if exact != "" {
		return exact, nil
	}
	slices.Sort(matches)
	if len(matches) == 1 {
		return matches[0], matches
	}
	return "", matches
}

// looksPrefixed says whether id starts with a prefix of its own, as bd's
// looksLikePrefixedID reads one: 1 to 8 lower-case letters or digits, a
// hyphen, then a lower-case letter or digit.
func looksPrefixed(id string) bool {
	i := strings.IndexByte(id, '-')
	if i <= 0 || i > 8 || i+1 >= len(id) {
		return false
	}
	lowerOrDigit := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
	for j := range i {
		if !lowerOrDigit(id[j]) {
			return false
		}
	}
	return lowerOrDigit(id[i+1])
}

// partialIDPart is the part of input that bd searches ids for: its hash
// (after a hyphen, the last part when that is a hash itself); ok false when
// input cannot be a partial id (empty, or a character no id has).
func partialIDPart(input string) (string, bool) {
	isHash := func(s string) bool {
		return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' || r == '.')
		})
	}
	if !isHash(input) {
		return "", false
	}
	if i := strings.LastIndexByte(input, '-'); i >= 0 && i < len(input)-1 && isHash(input[i+1:]) {
		return input[i+1:], true
	}
	return input, true
}
