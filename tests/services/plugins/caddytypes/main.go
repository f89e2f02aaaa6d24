// caddytypes is Caddy as cmd/caddy builds it plus one small handler module, weave_types, placed
// first in a route: for every request it writes the dynamic types of the interface values it was
// handed (the ResponseWriter, the request body, the next handler) and of the error the rest of the
// chain returned, as Go's %T prints them and with package paths in full (reflect), one JSON line per
// request, to the file $WEAVE_TYPES_TRUTH. The tracer names the same values from Caddy's type
// descriptors; the services test compares the two.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"

	"github.com/caddyserver/caddy/v2"
	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"

	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

func init() { caddy.RegisterModule(Types{}) }

// Types is the weave_types handler.
type Types struct{}

func (Types) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.weave_types", New: func() caddy.Module { return new(Types) }}
}

var (
	mu     sync.Mutex
	truth  *json.Encoder
	opened bool
)

// qualified spells t as DWARF and weave do: a defined type by its package path and name; pointers,
// slices, arrays, channels and maps from their elements; other unnamed types as reflect prints them.
func qualified(t reflect.Type, packages map[string]string) string {
	if t.Name() != "" {
		if t.PkgPath() == "" {
			return t.Name()
		}
		s := t.String()
		packages[t.PkgPath()] = s[:strings.Index(s, ".")]
		return t.PkgPath() + "." + t.Name()
	}
	switch t.Kind() {
	case reflect.Ptr:
		return "*" + qualified(t.Elem(), packages)
	case reflect.Slice:
		return "[]" + qualified(t.Elem(), packages)
	case reflect.Map:
		return "map[" + qualified(t.Key(), packages) + "]" + qualified(t.Elem(), packages)
	}
	return t.String()
}

func describe(v any, packages map[string]string) any {
	if v == nil {
		return nil
	}
	return map[string]any{"T": fmt.Sprintf("%T", v), "type": qualified(reflect.TypeOf(v), packages)}
}

// Check is what the services test traces: it only returns its error, so the tracer sees the values
// exactly as this module does.
//
//go:noinline
func Check(path string, w http.ResponseWriter, body any, next caddyhttp.Handler, err error) error {
	return err
}

func (Types) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	err := next.ServeHTTP(w, r)
	packages := map[string]string{}
	line := map[string]any{
		"path": r.URL.Path, "w": describe(w, packages), "body": describe(r.Body, packages),
		"next": describe(next, packages), "err": describe(err, packages),
	}
	line["packages"] = packages
	mu.Lock()
	if !opened {
		opened = true
		if f, e := os.Create(os.Getenv("WEAVE_TYPES_TRUTH")); e == nil {
			truth = json.NewEncoder(f)
			truth.SetEscapeHTML(false)
		}
	}
	if truth != nil {
		truth.Encode(line)
	}
	mu.Unlock()
	var body any = r.Body
	return Check(r.URL.Path, w, body, next, err)
}

func main() { caddycmd.Main() }
