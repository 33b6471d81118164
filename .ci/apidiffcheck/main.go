// Command apidiffcheck fails when apidiff reports an incompatible API change
// that CHANGELOG.md's "Breaking changes" section does not list. .ci/apidiff
// runs it; see that script for how the report is produced.
//
// The matching rule. Each line of `apidiff -m -incompatible` names one
// object, "./iflib.Config.CoreOffset: changed from *int to int" or
// "./bufring.(*DRBR[T]).Drain: removed" or "package <path>: removed". The
// object's name is written in Go's qualified form with the receiver's pointer
// and type parameters dropped: iflib.Config.CoreOffset, bufring.DRBR.Drain,
// examples/simnic.Generator.Start. The change is listed when a bullet of the
// Breaking changes section
//
//   - has that name inside a code span (`...`), qualified by the package's
//     import path relative to the module or by any shorter suffix of it that
//     names no other package of either tree (`simnic.Generator.Start` for
//     examples/simnic; `cpumap.X` is the library cpumap, the command is
//     `examples/cpumap.X`), and not as part of a longer name
//     (`bufring.NewDRBR(size, ...)` lists NewDRBR; `bufring.NewDRBRWith`
//     does not, nor does `iflib.RxStats.Foo` list iflib.RxStats);
//   - says old → new: the bullet contains "→".
//
// In the code span, `(*bufring.DRBR).Drain`, `bufring.DRBR[T].Drain` and
// `bufring.DRBR.Drain` are the same name. A removed package is listed by its
// path alone (`examples/foo`).
//
// Lines about package main are skipped: a command has no importable API. A
// package that was importable at the baseline and is a command now counts as
// removed.
//
// The section is the part of the changelog from the first heading whose text
// starts with "Breaking changes" to the next heading of the same or a higher
// level (a later such section is an older release's).
// A bullet is a line starting (after indentation) with "- " or "* ", with the
// non-blank lines that follow it up to the next bullet or heading.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

func main() {
	var (
		module   = flag.String("module", "", "the module path (go list -m)")
		report   = flag.String("report", "", "output of apidiff -m -incompatible OLD NEW")
		oldPkgs  = flag.String("old-pkgs", "", `"importpath name" per line for the baseline (go list -f '{{.ImportPath}} {{.Name}}' ./...)`)
		newPkgs  = flag.String("new-pkgs", "", "the same for the working tree")
		base     = flag.String("base", "", "the baseline commit, for messages")
		listOnly = flag.Bool("list", false, "print every incompatible change with the name a bullet must carry, and whether it is listed; never fail")
	)
	flag.Parse()
	if *module == "" || *report == "" || *oldPkgs == "" || *newPkgs == "" || flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: apidiffcheck -module M -report FILE -old-pkgs FILE -new-pkgs FILE [-base REV] [-list] CHANGELOG.md")
		os.Exit(2)
	}
	res, err := run(*module, *report, *oldPkgs, *newPkgs, flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "apidiffcheck:", err)
		os.Exit(1)
	}
	res.print(os.Stdout, flag.Arg(0), *base, *listOnly)
	if len(res.missing) > 0 && !*listOnly {
		os.Exit(1)
	}
}

func run(module, reportFile, oldFile, newFile, changelogFile string) (*result, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(name)
		return string(b), err
	}
	rep, err := read(reportFile)
	if err != nil {
		return nil, err
	}
	oldList, err := read(oldFile)
	if err != nil {
		return nil, err
	}
	newList, err := read(newFile)
	if err != nil {
		return nil, err
	}
	cl, err := read(changelogFile)
	if err != nil {
		return nil, err
	}
	oldP, err := parsePackages(module, oldList)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", oldFile, err)
	}
	newP, err := parsePackages(module, newList)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", newFile, err)
	}
	changes, err := parseReport(module, rep, oldP, newP)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", reportFile, err)
	}
	bullets, err := breakingBullets(cl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", changelogFile, err)
	}
	return check(changes, bullets, newQualifiers(oldP, newP)), nil
}

// packages maps a package's import path relative to the module ("iflib",
// "examples/simnic"; "" for the module's root) to its package name.
type packages map[string]string

func parsePackages(module, list string) (packages, error) {
	p := packages{}
	for i, line := range strings.Split(list, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		path, name, ok := strings.Cut(line, " ")
		if !ok || name == "" {
			return nil, fmt.Errorf("line %d: %q is not \"importpath name\"", i+1, line)
		}
		rel, ok := relPath(module, path)
		if !ok {
			return nil, fmt.Errorf("line %d: %s is not in module %s", i+1, path, module)
		}
		p[rel] = name
	}
	if len(p) == 0 {
		return nil, errors.New("no packages")
	}
	return p, nil
}

func relPath(module, path string) (string, bool) {
	if path == module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// A change is one incompatible change reported by apidiff.
type change struct {
	line string // apidiff's line, without the leading "- "
	pkg  string // relative package path
	obj  string // the object within the package ("Config.CoreOffset"); "" for the package itself
}

// name is what a bullet must carry, with the package's full relative path as
// its qualifier.
func (c change) name() string {
	switch {
	case c.obj == "":
		return c.pkg
	case c.pkg == "":
		return c.obj
	}
	return c.pkg + "." + c.obj
}

var (
	// receiverRE matches a parenthesized receiver before a selector,
	// "(*DRBR[T])." or "(*bufring.DRBR).", not a call's arguments
	// ("f(x).M"); the name is kept.
	receiverRE = regexp.MustCompile(`(^|[^\w])\(\*?([A-Za-z_][\w./]*?)(?:\[[^\]]*\])?\)\.`)
	// typeParamsRE matches type parameters before a selector, "DRBR[T].".
	typeParamsRE = regexp.MustCompile(`([\w])\[[^\]]*\]\.`)
	identRE      = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$`)
)

// normalize rewrites receivers and instantiated types to the plain
// qualified form: "(*bufring.DRBR[T]).Drain" → "bufring.DRBR.Drain".
func normalize(s string) string {
	s = receiverRE.ReplaceAllString(s, "$1$2.")
	return typeParamsRE.ReplaceAllString(s, "$1.")
}

func parseReport(module, rep string, oldP, newP packages) ([]change, error) {
	var out []change
	seen := map[string]bool{}
	add := func(c change) {
		if !seen[c.line] {
			seen[c.line] = true
			out = append(out, c)
		}
	}
	for i, raw := range strings.Split(rep, "\n") {
		if strings.TrimSpace(raw) == "" {
			continue
		}
		line, ok := strings.CutPrefix(raw, "- ")
		if !ok {
			return nil, fmt.Errorf("line %d: %q is not an apidiff change line", i+1, raw)
		}
		subject, _, ok := strings.Cut(line, ": ")
		if !ok {
			return nil, fmt.Errorf("line %d: %q has no \": \"", i+1, raw)
		}
		var c change
		c.line = line
		if path, ok := strings.CutPrefix(subject, "package "); ok {
			rel, ok := relPath(module, path)
			if !ok {
				return nil, fmt.Errorf("line %d: package %s is not in module %s", i+1, path, module)
			}
			c.pkg = rel
		} else {
			// "./iflib.(*Context).RxZones", "./bufring.NewDRBR, method set of *X"
			subject, _, _ = strings.Cut(subject, ", ")
			rest, ok := strings.CutPrefix(subject, "./")
			if ok {
				dot := strings.Index(rest, ".")
				if slash := strings.LastIndex(rest, "/"); slash >= 0 {
					if d := strings.Index(rest[slash:], "."); d >= 0 {
						dot = slash + d
					} else {
						dot = -1
					}
				}
				if dot < 0 {
					return nil, fmt.Errorf("line %d: no object in %q", i+1, subject)
				}
				c.pkg, rest = rest[:dot], rest[dot+1:]
			}
			c.obj = normalize(rest)
			if !identRE.MatchString(c.obj) {
				return nil, fmt.Errorf("line %d: cannot read the object name in %q (got %q)", i+1, subject, c.obj)
			}
		}
		_, inOld := oldP[c.pkg]
		_, inNew := newP[c.pkg]
		if !inOld && !inNew {
			return nil, fmt.Errorf("line %d: package %q is in neither package list", i+1, c.pkg)
		}
		if isCommand(c.pkg, oldP, newP) {
			continue
		}
		add(c)
	}
	// A package importable at the baseline that is a command now.
	for _, rel := range sortedKeys(oldP) {
		if oldP[rel] != "main" && newP[rel] == "main" {
			add(change{line: fmt.Sprintf("package %s: became package main (no longer importable)", joinPath(module, rel)), pkg: rel})
		}
	}
	return out, nil
}

// isCommand reports whether the package is package main in every tree that has it.
func isCommand(rel string, oldP, newP packages) bool {
	o, inOld := oldP[rel]
	n, inNew := newP[rel]
	return (!inOld || o == "main") && (!inNew || n == "main")
}

func joinPath(module, rel string) string {
	if rel == "" {
		return module
	}
	return module + "/" + rel
}

// qualifiers maps each accepted qualifier to the relative package path it names.
type qualifiers map[string]string

// newQualifiers accepts, for every package of either tree, its relative path
// and each shorter "/"-suffix of it that names it alone: a suffix is the path
// of the package that has it as its whole path, if there is one; otherwise of
// the single package whose path ends with "/"+suffix; otherwise of none.
func newQualifiers(oldP, newP packages) qualifiers {
	all := map[string]bool{}
	for rel := range oldP {
		all[rel] = true
	}
	for rel := range newP {
		all[rel] = true
	}
	holders := map[string][]string{} // suffix → packages ending with it
	for rel := range all {
		parts := strings.Split(rel, "/")
		for i := range parts {
			s := strings.Join(parts[i:], "/")
			holders[s] = append(holders[s], rel)
		}
	}
	q := qualifiers{}
	for s, h := range holders {
		switch {
		case all[s]:
			q[s] = s
		case len(h) == 1:
			q[s] = h[0]
		}
	}
	return q
}

// names returns every spelling of c's name a bullet may use.
func (q qualifiers) names(c change) []string {
	var out []string
	for s, rel := range q {
		if rel != c.pkg {
			continue
		}
		if c.obj == "" {
			out = append(out, s)
		} else {
			out = append(out, s+"."+c.obj)
		}
	}
	if c.pkg == "" && c.obj != "" {
		out = append(out, c.obj)
	}
	sort.Strings(out)
	return out
}

// A bullet of the Breaking changes section.
type bullet struct {
	line  int      // 1-based line of its first line
	text  string   // the whole bullet, lines joined by spaces
	spans []string // its code spans, normalized
}

var (
	headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*)$`)
	bulletRE  = regexp.MustCompile(`^\s*[-*]\s+`)
	spanRE    = regexp.MustCompile("`+([^`]+)`+")
)

// breakingBullets returns the bullets of the changelog's Breaking changes
// section; an error if there is no such section.
func breakingBullets(cl string) ([]bullet, error) {
	lines := strings.Split(cl, "\n")
	level := 0
	var (
		out   []bullet
		cur   *bullet
		found bool
		fence bool
	)
	flush := func() {
		if cur != nil {
			for _, m := range spanRE.FindAllStringSubmatch(cur.text, -1) {
				cur.spans = append(cur.spans, normalize(m[1]))
			}
			out = append(out, *cur)
			cur = nil
		}
	}
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		if m := headingRE.FindStringSubmatch(l); m != nil {
			if level > 0 && len(m[1]) <= level {
				break // the section ends; a later one is an older release's
			}
			if level == 0 && strings.HasPrefix(strings.ToLower(m[2]), "breaking changes") {
				found = true
				level = len(m[1])
			}
			flush()
			continue
		}
		if level == 0 {
			continue
		}
		switch {
		case bulletRE.MatchString(l):
			flush()
			cur = &bullet{line: i + 1, text: strings.TrimSpace(l)}
		case strings.TrimSpace(l) == "":
			flush()
		case cur != nil:
			cur.text += " " + strings.TrimSpace(l)
		}
	}
	flush()
	if !found {
		return nil, errors.New(`no "Breaking changes" heading`)
	}
	return out, nil
}

// listedIn reports whether name occurs in span as a whole name: not preceded
// by an identifier character, '.' or '/', and not followed by an identifier
// character or by '.' and one.
func listedIn(span, name string) bool {
	for off := 0; ; {
		i := strings.Index(span[off:], name)
		if i < 0 {
			return false
		}
		i += off
		j := i + len(name)
		before := i == 0 || !isIdentByte(span[i-1]) && span[i-1] != '.' && span[i-1] != '/'
		after := j == len(span) || !isIdentByte(span[j]) && !(span[j] == '.' && j+1 < len(span) && isIdentByte(span[j+1]))
		if before && after {
			return true
		}
		off = i + 1
	}
}

func isIdentByte(b byte) bool {
	return b == '_' || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

type result struct {
	changes []change
	listed  map[int]int // index in changes → line of the bullet listing it
	missing []change
	// noArrow: changes named only in bullets without "→", with those lines.
	noArrow map[int][]int
	names   map[int][]string
}

func check(changes []change, bullets []bullet, q qualifiers) *result {
	r := &result{changes: changes, listed: map[int]int{}, noArrow: map[int][]int{}, names: map[int][]string{}}
	for i, c := range changes {
		names := q.names(c)
		r.names[i] = names
		for _, b := range bullets {
			hit := false
			for _, s := range b.spans {
				for _, n := range names {
					if listedIn(s, n) {
						hit = true
					}
				}
			}
			if !hit {
				continue
			}
			if strings.Contains(b.text, "→") {
				r.listed[i] = b.line
				break
			}
			r.noArrow[i] = append(r.noArrow[i], b.line)
		}
		if _, ok := r.listed[i]; !ok {
			r.missing = append(r.missing, c)
		}
	}
	return r
}

func (r *result) print(w io.Writer, changelog, base string, all bool) {
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	since := ""
	if base != "" {
		since = " since " + base
	}
	if all {
		for i, c := range r.changes {
			where := "NOT LISTED"
			if l, ok := r.listed[i]; ok {
				where = fmt.Sprintf("%s:%d", changelog, l)
			}
			fmt.Fprintf(bw, "%-60s %s\n    %s\n", "`"+shortest(r.names[i])+"`", where, c.line)
		}
	}
	fmt.Fprintf(bw, "apidiff: %d incompatible changes%s, %d listed in %s's Breaking changes, %d not\n",
		len(r.changes), since, len(r.listed), changelog, len(r.missing))
	if len(r.missing) == 0 || all {
		return
	}
	fmt.Fprintf(bw, "\nNot listed (add a bullet with the name in a code span and old → new, saying what a caller must change):\n")
	for i, c := range r.changes {
		if _, ok := r.listed[i]; ok {
			continue
		}
		fmt.Fprintf(bw, "- `%s`: %s", shortest(r.names[i]), strings.TrimPrefix(c.line, "./"))
		if l := r.noArrow[i]; len(l) > 0 {
			fmt.Fprintf(bw, "  [named at line %v, but that bullet has no →]", l)
		}
		fmt.Fprintln(bw)
	}
}

func shortest(names []string) string {
	if len(names) == 0 {
		return "?"
	}
	best := names[0]
	for _, n := range names[1:] {
		if len(n) < len(best) {
			best = n
		}
	}
	return best
}

func sortedKeys(m packages) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
