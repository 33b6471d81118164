package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const root = "../.."

func checker() *Checker {
	return &Checker{
		Dir:        ".",
		PreludeDir: "testdata/prelude",
		CtxPkg:     "github.com/goiflib/goiflib/iflib",
		CtxName:    "Context",
	}
}

// goFenceRE counts the ```go fences a reader sees, independently of Extract.
var goFenceRE = regexp.MustCompile("(?m)^ {0,3}```go\\s*$")

// TestDocs checks every Go block of README.md and docs/*.md (see the
// package doc for the convention).
func TestDocs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	var blocks []Block
	fences := 0
	for _, f := range files {
		md, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, err := filepath.Rel(root, f)
		require.NoError(t, err)
		bs, err := Extract(filepath.ToSlash(rel), md)
		require.NoError(t, err)
		blocks = append(blocks, bs...)
		fences += len(goFenceRE.FindAll(md, -1))
	}
	require.Equal(t, fences, len(blocks), "every ```go fence is a checked block")
	require.NotEmpty(t, blocks, "the README has Go blocks")
	assert.Empty(t, checker().Check(blocks), "README and docs Go blocks that do not compile")
}

func TestExtract(t *testing.T) {
	md := "# T\n\n" +
		"```go\nx := 1\n_ = x\n```\n\n" + // line 3
		"<!-- doctest: prelude=driver -->\n\n" +
		"```go\nfoo()\n```\n" + // line 10
		"    go run ./x   # an indented command: not Go\n" +
		"```sh\necho hi\n```\n" +
		"1. In a list:\n\n   ```go\n   package main\n\n   func main() {}\n   ```\n" + // line 19
		"~~~~go\na := \"```\"\n~~~~\n"
	bs, err := Extract("T.md", []byte(md))
	require.NoError(t, err)
	require.Len(t, bs, 4)
	assert.Equal(t, Block{File: "T.md", Line: 4, Code: "x := 1\n_ = x\n"}, bs[0])
	assert.Equal(t, Block{File: "T.md", Line: 11, Prelude: "driver", Code: "foo()\n"}, bs[1])
	assert.Equal(t, Block{File: "T.md", Line: 20, Complete: true, Code: "package main\n\nfunc main() {}\n"}, bs[2])
	assert.Equal(t, "a := \"```\"\n", bs[3].Code)
	assert.Equal(t, "T.md:20", bs[2].Pos())

	for name, bad := range map[string]string{
		"unclosed":             "```go\nx := 1\n",
		"unknown directive":    "<!-- doctest: skip -->\n```go\nx\n```\n",
		"misspelt directive":   "<!-- doctest: prelud=driver -->\n```go\nx\n```\n",
		"directive, no block":  "<!-- doctest: prelude=driver -->\n",
		"directive then prose": "<!-- doctest: prelude=driver -->\ntext\n```go\nx\n```\n",
		"directive on sh":      "<!-- doctest: prelude=driver -->\n```sh\nx\n```\n",
		"prelude on a file":    "<!-- doctest: prelude=driver -->\n```go\npackage p\n```\n",
	} {
		_, err := Extract("T.md", []byte(bad))
		assert.Error(t, err, name)
	}
}

// TestCheckFails shows that the check fails, at the right line of the
// Markdown file, for each way a block can stop compiling.
func TestCheckFails(t *testing.T) {
	md := strings.Join([]string{
		"<!-- doctest: prelude=driver -->", // 1
		"```go",                            // 2
		"bus, _ := busdma.NewDevice(space, busdma.DeviceConfig{Name: \"n\"})", // 3
		"ic, err := iflib.Register(iflib.Attachment{Driver: drv, Bus: bus})",  // 4
		"if err != nil {",                  // 5
		"\treturn err",                     // 6
		"}",                                // 7
		"p, _ := ic.NewZone()",             // 8: no such method
		"```",                              // 9
		"",                                 // 10
		"```go",                            // 11
		"unused := 1",                      // 12: declared and not used
		"```",                              // 13
		"",                                 // 14
		"```go",                            // 15
		"package main",                     // 16
		"",                                 // 17
		"import \"os\"",                    // 18: imported and not used
		"",                                 // 19
		"func main() {}",                   // 20
		"```",                              // 21
		"",                                 // 22
		"<!-- doctest: prelude=driver -->", // 23
		"```go",                            // 24
		"ctx, _ := iflib.Register(iflib.Attachment{Driver: drv})", // 25: the naming rule
		"_ = ctx",                          // 26
		"```",                              // 27
		"",                                 // 28
		"<!-- doctest: prelude=nosuch -->", // 29
		"```go",                            // 30
		"x()",                              // 31
		"```",                              // 32
	}, "\n") + "\n"
	bs, err := Extract("T.md", []byte(md))
	require.NoError(t, err)
	require.Len(t, bs, 5)
	var msgs []string
	for _, err := range checker().Check(bs) {
		msgs = append(msgs, err.Error())
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{
		"T.md:8:", // ic.NewZone undefined
		"T.md:8:1: declared and not used: p",
		"T.md:12:1: declared and not used: unused",
		"T.md:18:8: \"os\" imported and not used",
		"T.md:25:1: variable of type *iflib.Context is called ctx",
		"T.md:31: prelude \"nosuch\"",
	} {
		assert.Contains(t, joined, want)
	}
	assert.NotContains(t, joined, "T.md:4", "a correct line is not blamed")
}

// TestCheckPasses: correct blocks, with and without a prelude, give nothing.
func TestCheckPasses(t *testing.T) {
	md := "```go\nx := []int{1}\n_ = len(x)\n```\n" +
		"<!-- doctest: prelude=driver -->\n```go\nic, err := iflib.Register(iflib.Attachment{Driver: drv})\nif err != nil {\n\treturn err\n}\n_ = ic.Init()\n```\n" +
		"```go\npackage main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println() }\n```\n"
	bs, err := Extract("T.md", []byte(md))
	require.NoError(t, err)
	require.Len(t, bs, 3)
	assert.Empty(t, checker().Check(bs))
}
