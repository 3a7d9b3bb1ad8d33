package cli

import (
	"errors"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/bdclaim/bd-claim/claim"
)

// Did you mean: a mistyped flag or command word is refused with the one
// it is nearest to, when one is near enough to be a typo.

// commandWords are the words that may start a command line, sorted.
func commandWords() []string {
	words := []string{"claim", "demo", "version", "help"}
	for name := range commands {
		if name != "" {
			words = append(words, name)
		}
	}
	slices.Sort(words)
	return words
}

// helpRef is how a command's help is asked for.
func helpRef(c *command) string {
	if c.name == "" {
		return "bd-claim --help"
	}
	return "bd-claim " + c.name + " --help"
}

// parseError is a refusal of the command line by pflag, with the flag the
// user may have meant; help says where the flags are listed.
func parseError(help string, fs *pflag.FlagSet, err error) error {
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) {
		name := unknown.GetSpecifiedName()
		if short := unknown.GetSpecifiedShortnames(); short != "" {
			name, _, _ = strings.Cut(short, "=") // -agent: a long flag given with one dash
		}
		var flags []string
		fs.VisitAll(func(f *pflag.Flag) {
			if !f.Hidden {
				flags = append(flags, f.Name)
			}
		})
		if flag := closest(name, flags); flag != "" {
			return claim.Errorf(claim.EInvalid, "%v; did you mean --%s? (see %s)", err, flag, help)
		}
	}
	return claim.Errorf(claim.EInvalid, "%v (see %s)", err, help)
}

// commandWord refuses a claim whose first argument is a word, not a flag:
// a mistyped command (bd-claim relase --id X), which would otherwise be
// read as a claim with an unexpected argument, or refused for a flag of
// the command meant. nil when the first argument is a flag.
func commandWord(c *command, args []string) error {
	if c != claimCommand || len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil
	}
	if word := closest(args[0], commandWords()); word != "" {
		return claim.Errorf(claim.EInvalid, "unknown command %q: did you mean %q? (see bd-claim %s --help)", args[0], word, word)
	}
	return claim.Errorf(claim.EInvalid, "unknown command %q: the commands are %s (see bd-claim --help)", args[0], strings.Join(commandWords(), ", "))
}

// strayArgument refuses an argument after the flags; a command word there
// is said to come first.
func strayArgument(c *command, arg string) error {
	switch word := closest(arg, commandWords()); {
	case word == "" || c != claimCommand:
	case word == arg:
		return claim.Errorf(claim.EInvalid, "unexpected argument %q: a command comes first, before its flags (see bd-claim %s --help)", arg, word)
	default:
		return claim.Errorf(claim.EInvalid, "unexpected argument %q: did you mean the command %q? A command comes first, before its flags (see bd-claim %s --help)", arg, word, word)
	}
	return claim.Errorf(claim.EInvalid, "unexpected argument %q (see %s)", arg, helpRef(c))
}

// closest is the candidate nearest to word, in any case, when it is near
// enough to be a typo of it: at most one edit away for a word of up to
// five characters, two for a longer one (editDistance); the first of
// those equally near; "" for none.
func closest(word string, candidates []string) string {
	word = strings.ToLower(word)
	limit := 1
	if len([]rune(word)) > 5 {
		limit = 2
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := editDistance(word, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal string alignment distance between a and b:
// how many characters must be inserted, deleted, replaced or swapped with
// their neighbour (the typist's four slips) to turn a into b.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// d[i][j] is the distance between s[:i] and t[:j].
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}
