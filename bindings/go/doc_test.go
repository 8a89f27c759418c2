package symm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every exported name of the package has a doc comment (go doc shows it).
func TestExportedNamesAreDocumented(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	fset := token.NewFileSet()
	var missing []string
	n := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if name == "doc.go" && f.Doc == nil {
			missing = append(missing, "package doc")
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || ast.IsExported(recvName(d.Recv.List[0].Type))) {
					n++
					if d.Doc == nil {
						missing = append(missing, fset.Position(d.Pos()).String()+" "+d.Name.Name)
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					var names []*ast.Ident
					var doc, line *ast.CommentGroup
					switch s := s.(type) {
					case *ast.TypeSpec:
						names, doc, line = []*ast.Ident{s.Name}, s.Doc, s.Comment
					case *ast.ValueSpec:
						names, doc, line = s.Names, s.Doc, s.Comment
					}
					for _, id := range names {
						if id.IsExported() {
							n++
							if d.Doc == nil && doc == nil && line == nil {
								missing = append(missing, fset.Position(id.Pos()).String()+" "+id.Name)
							}
						}
					}
				}
			}
		}
	}
	if n < 150 {
		t.Fatalf("only %d exported names found", n)
	}
	if len(missing) > 0 {
		t.Fatalf("exported names without a doc comment:\n  %s", strings.Join(missing, "\n  "))
	}
}
