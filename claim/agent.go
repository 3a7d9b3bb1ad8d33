package claim

import (
	"unicode"
	"unicode/utf8"
)

// MaxAgentLen is the longest agent name accepted, in characters.
const MaxAgentLen = 64

// ValidateAgent checks an agent name: non-empty, valid UTF-8, at most
// MaxAgentLen characters, no control characters. The name is written into
// issues.assignee and events.actor as given.
func ValidateAgent(name string) error {
	switch {
	case name == "":
		return Errorf(EInvalid, "agent name is empty: pass --agent NAME or set BD_ACTOR")
	case !utf8.ValidString(name):
		return Errorf(EInvalid, "agent name is not valid UTF-8")
	case utf8.RuneCountInString(name) > MaxAgentLen:
		return Errorf(EInvalid, "agent name is %d characters long; the limit is %d", utf8.RuneCountInString(name), MaxAgentLen)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return Errorf(EInvalid, "agent name contains the control character %U", r)
		}
	}
	return nil
}
