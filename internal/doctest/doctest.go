// Package doctest type-checks the Go code blocks of the repository's
// Markdown (README.md and docs/*.md), so that a block stops compiling only
// together with a failing `go test ./...`. Its test, TestDocs, does the work;
// this file holds the extraction and the check.
//
// # The convention
//
// Every fenced block whose info string is "go" is checked; other blocks
// (indented commands, ```sh) are not. A block that starts (after comments)
// with a package clause is a complete file, checked alone as its own package.
// Any other block is a snippet: it becomes the body of a function
// `func _() error { ...; return nil }` (so it may `return err`) in a file that
// begins with a prelude, the package clause, imports and declarations of what
// the snippet uses without declaring it (the device, the frame, another
// block's variables). A snippet names its prelude in an HTML comment just
// before the fence (blank lines between them allowed), which Markdown
// renderers hide:
//
//	<!-- doctest: prelude=driver -->
//
// The prelude is then internal/doctest/testdata/prelude/driver.go, a
// gofmt-clean Go file. Without such a comment the prelude is `package doc`
// alone: the snippet may use only builtins.
//
// Any other `<!-- doctest: ... -->` comment is an error, so a misspelt
// directive cannot silently turn a check off; there is no way to skip a
// block.
//
// The check is the compiler's front end (go/types) over the export data of
// the imported packages as `go list -export` builds them, so it reports what
// `go build` would: undefined names, wrong types, unused variables and
// imports. Errors point into the Markdown file (`README.md:47:12`) through
// //line directives.
//
// One naming rule is checked too: a variable, parameter or field of type
// iflib.Context or *iflib.Context may not be called ctx. iflib.Context is
// FreeBSD's if_ctx_t, and in Go code ctx means a context.Context (the README
// once passed one for the other); call it ic.
package doctest

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
)

// A Block is one fenced Go block of a Markdown file.
type Block struct {
	File     string // the Markdown file, as given to Extract
	Line     int    // the line of the block's first line of code (1-based)
	Prelude  string // the prelude's name ("" for none); unused for a complete file
	Complete bool   // the block is a whole file (it has a package clause)
	Code     string // the code, without the fences and their indentation
}

// Pos is where the block starts, file:line.
func (b Block) Pos() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

var (
	fenceRE     = regexp.MustCompile("^( {0,3})(`{3,}|~{3,})[ \t]*([^`\\s]*)")
	directiveRE = regexp.MustCompile(`^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$`)
	preludeRE   = regexp.MustCompile(`^prelude=([A-Za-z0-9_-]+)$`)
)

// Extract returns the Go blocks of a Markdown file. An unclosed fence, a
// doctest comment that is not a known directive, or one not followed by a Go
// block, is an error.
func Extract(file string, md []byte) ([]Block, error) {
	lines := strings.Split(string(md), "\n")
	var (
		out     []Block
		pending string // the prelude named by the directive above
		pendAt  int
	)
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSuffix(lines[i], "\r")
		if m := directiveRE.FindStringSubmatch(l); m != nil {
			p := preludeRE.FindStringSubmatch(m[1])
			if p == nil {
				return nil, fmt.Errorf("%s:%d: unknown doctest directive %q (the only one is prelude=NAME)", file, i+1, m[1])
			}
			if pending != "" {
				return nil, fmt.Errorf("%s:%d: doctest directive with no Go block after it", file, pendAt)
			}
			pending, pendAt = p[1], i+1
			continue
		}
		m := fenceRE.FindStringSubmatch(l)
		if m == nil {
			if pending != "" && strings.TrimSpace(l) != "" {
				return nil, fmt.Errorf("%s:%d: doctest directive not directly before a ```go fence", file, pendAt)
			}
			continue
		}
		indent, fence, lang := m[1], m[2], m[3]
		start := i + 1
		var code []string
		closed := false
		for i++; i < len(lines); i++ {
			c := strings.TrimSuffix(lines[i], "\r")
			t := strings.TrimLeft(c, " ")
			if strings.HasPrefix(t, fence) && strings.Trim(t, fence[:1]) == "" && len(c)-len(t) <= 3 {
				closed = true
				break
			}
			code = append(code, strings.TrimPrefix(c, indent))
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: fence not closed", file, start)
		}
		if lang != "go" {
			if pending != "" {
				return nil, fmt.Errorf("%s:%d: doctest directive before a %q block, not a Go one", file, pendAt, lang)
			}
			continue
		}
		b := Block{File: file, Line: start + 1, Prelude: pending, Code: strings.Join(code, "\n") + "\n"}
		b.Complete = startsWithPackage(b.Code)
		if b.Complete && b.Prelude != "" {
			return nil, fmt.Errorf("%s: a complete file (package clause) takes no prelude", b.Pos())
		}
		out = append(out, b)
		pending = ""
	}
	if pending != "" {
		return nil, fmt.Errorf("%s:%d: doctest directive with no Go block after it", file, pendAt)
	}
	return out, nil
}

// startsWithPackage reports whether the first token of code is "package".
func startsWithPackage(code string) bool {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", -1, len(code)), []byte(code), nil, 0)
	_, tok, _ := s.Scan()
	return tok == token.PACKAGE
}

// Source returns the Go file the block is checked as. prelude is the
// prelude's source (ignored for a complete file), preludeFile its name for
// positions.
func (b Block) Source(preludeFile, prelude string) string {
	var s strings.Builder
	if b.Complete {
		fmt.Fprintf(&s, "//line %s:%d:1\n%s", b.File, b.Line, b.Code)
		return s.String()
	}
	if prelude == "" {
		prelude = "package doc\n"
		preludeFile = "(empty prelude)"
	}
	fmt.Fprintf(&s, "//line %s:1:1\n%s\nfunc _() error {\n", preludeFile, prelude)
	fmt.Fprintf(&s, "//line %s:%d:1\n%s", b.File, b.Line, b.Code)
	// The closing lines belong to no line of the Markdown file.
	s.WriteString("//line (end of block):1\nreturn nil\n}\n")
	return s.String()
}

// A Checker type-checks blocks against the packages of the module in Dir.
type Checker struct {
	Dir        string // a directory of the module (where go list runs)
	PreludeDir string // where the preludes are, NAME.go each
	// CtxPkg and CtxName are the import path and name of the type whose
	// variables may not be called ctx (iflib.Context).
	CtxPkg, CtxName string
}

// Check type-checks every block and returns one error per problem, each
// starting with its position in the Markdown file.
func (c *Checker) Check(blocks []Block) []error {
	var errs []error
	fset := token.NewFileSet()
	type parsed struct {
		b Block
		f *ast.File
	}
	var files []parsed
	imports := map[string]bool{}
	for _, b := range blocks {
		name := ""
		prelude := ""
		if !b.Complete && b.Prelude != "" {
			name = filepath.Join(c.PreludeDir, b.Prelude+".go")
			src, err := os.ReadFile(name)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: prelude %q: %w", b.Pos(), b.Prelude, err))
				continue
			}
			prelude = string(src)
			name = filepath.ToSlash(name)
		}
		f, err := parser.ParseFile(fset, b.Pos(), b.Source(name, prelude), parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			errs = append(errs, listErrors(err)...)
			continue
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			imports[p] = true
		}
		files = append(files, parsed{b, f})
	}
	if len(files) == 0 {
		return errs
	}
	exports := map[string]string{}
	if len(imports) > 0 {
		var err error
		if exports, err = c.exportData(imports); err != nil {
			return append(errs, err)
		}
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %q (go list did not build it)", path)
		}
		return os.Open(f)
	})
	for _, p := range files {
		info := &types.Info{Defs: map[*ast.Ident]types.Object{}}
		conf := types.Config{
			Importer: imp,
			Error:    func(err error) { errs = append(errs, err) },
		}
		// A Config with Error keeps going after the first error; the
		// returned error repeats one of them.
		_, _ = conf.Check(p.f.Name.Name, fset, []*ast.File{p.f}, info)
		errs = append(errs, c.ctxNames(fset, info)...)
	}
	return errs
}

// ctxNames finds variables of the context type called ctx.
func (c *Checker) ctxNames(fset *token.FileSet, info *types.Info) []error {
	var errs []error
	for id, obj := range info.Defs {
		v, ok := obj.(*types.Var)
		if !ok || id.Name != "ctx" {
			continue
		}
		t := v.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		n, ok := t.(*types.Named)
		if !ok || n.Obj().Pkg() == nil || n.Obj().Pkg().Path() != c.CtxPkg || n.Obj().Name() != c.CtxName {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: %s of type %s is called ctx, the name of a context.Context in Go: call it ic",
			fset.Position(id.Pos()), kind(v), types.TypeString(v.Type(), func(p *types.Package) string { return p.Name() })))
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errs
}

func kind(v *types.Var) string {
	if v.IsField() {
		return "field"
	}
	return "variable"
}

// exportData builds the imported packages and their dependencies and
// returns the export data file of each, by import path.
func (c *Checker) exportData(imports map[string]bool) (map[string]string, error) {
	args := []string{"list", "-e", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}\t{{with .Error}}{{.Err}}{{end}}"}
	for p := range imports {
		args = append(args, p)
	}
	sort.Strings(args[6:])
	cmd := exec.Command("go", args...)
	cmd.Dir = c.Dir
	cmd.Env = os.Environ()
	if runtime.GOOS != "linux" {
		// The blocks document Linux APIs too (examples/afxdp).
		cmd.Env = append(cmd.Env, "GOOS=linux")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	exports := map[string]string{}
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			return nil, fmt.Errorf("go list: unexpected line %q", line)
		}
		if f[2] != "" {
			errs = append(errs, fmt.Errorf("go list %s: %s", f[0], f[2]))
			continue
		}
		if f[1] != "" {
			exports[f[0]] = f[1]
		}
	}
	return exports, errors.Join(errs...)
}

// listErrors flattens a parser's error list.
func listErrors(err error) []error {
	var l scanner.ErrorList
	if errors.As(err, &l) {
		out := make([]error, len(l))
		for i, e := range l {
			out[i] = e
		}
		return out
	}
	return []error{err}
}
