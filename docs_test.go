package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// mdLink is an inline Markdown link or image: [text](target) or
// ![alt](target), the target without a title.
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// mdRef is a reference definition, [label]: target.
var mdRef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s+<?([^>\s]+)>?`)

// checkedPages must be among the pages TestDocsLinks reads.
var checkedPages = []string{"README.md", "BENCHMARKS.md", "docs/architecture.md", "docs/development.md",
	"docs/bdjson.md", "docs/dolt.md", "docs/filters.md", "docs/gascity.md", "docs/lifecycle.md", "docs/mcp.md", "testdata/fixtures/README.md"}

// Every relative link in the repository's Markdown files leads somewhere:
// the file or directory exists, and an #anchor names a heading of the
// page it points to (GitHub's anchors). Links to other sites are not
// fetched.
func TestDocsLinks(t *testing.T) {
	var pages []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules"):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".md"):
			pages = append(pages, path)
		}
		return nil
	})
	assert.NilError(t, err)
	for _, want := range checkedPages {
		assert.Check(t, slices.Contains(pages, filepath.FromSlash(want)), "%s is not checked", want)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		text, err := os.ReadFile(page)
		assert.NilError(t, err)
		anchors[page] = headingAnchors(string(text))
		return anchors[page]
	}
	for _, page := range pages {
		text, err := os.ReadFile(page)
		assert.NilError(t, err)
		for _, target := range links(string(text)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			dest := page
			if path != "" {
				dest = filepath.Clean(filepath.Join(filepath.Dir(page), path))
				_, err := os.Stat(dest)
				if !assert.Check(t, err == nil, "%s: link to %s: no such file", page, target) {
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(dest, ".md") {
				assert.Check(t, anchorsOf(dest)[anchor], "%s: link to %s: no such heading in %s", page, target, dest)
			}
		}
	}
}

// links are the targets of the inline links of a Markdown text, outside
// fenced code blocks and code spans.
func links(text string) []string {
	var targets []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(withoutCodeSpans(line), -1) {
			targets = append(targets, m[1])
		}
		if m := mdRef.FindStringSubmatch(line); m != nil {
			targets = append(targets, m[1])
		}
	}
	return targets
}

// withoutCodeSpans blanks what is between backticks.
func withoutCodeSpans(line string) string {
	parts := strings.Split(line, "`")
	for i := 1; i < len(parts); i += 2 {
		parts[i] = ""
	}
	return strings.Join(parts, "`")
}

// headingAnchors are the anchors GitHub gives a page's headings: the
// heading's text in lower case, without punctuation other than hyphens
// and underscores, spaces made hyphens, and -1, -2 ... for repeats.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		heading := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		slug := b.String()
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// links finds links, images and reference definitions, and none in code.
func TestDocsLinksFinds(t *testing.T) {
	text := "See [a](a.md#x) and ![chart](docs/bench/c.svg \"title\").\n" +
		"`[not](code.md)` [ref]: <ref.md>\n" +
		"[ref]: ref.md\n" +
		"```\n[fenced](no.md)\n```\n" +
		"[site](https://example.com)\n"
	assert.DeepEqual(t, links(text), []string{"a.md#x", "docs/bench/c.svg", "ref.md", "https://example.com"})
	anchors := headingAnchors("# The MCP server: `bd-claim mcp`\n## Taking work\n## Taking work\n```\n# not a heading\n```\n")
	assert.DeepEqual(t, anchors, map[string]bool{"the-mcp-server-bd-claim-mcp": true, "taking-work": true, "taking-work-1": true})
}
