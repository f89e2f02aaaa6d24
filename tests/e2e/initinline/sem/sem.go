// Package sem declares its values as go.opentelemetry.io/otel/semconv does: package-level variables
// initialised through the inlined constructor. Go 1.21+ evaluates them while compiling the package
// init and writes inline records for them whose parent PC is 0, inside the records themselves.
package sem

import "initinline/kv"

const CodeKey = kv.Key("rpc.code")

var (
	Ok       = CodeKey.Int(0)
	Canceled = CodeKey.Int(1)
	Unknown  = CodeKey.Int(2)
)

// Codes lists what the initializers produced (one Int64Value call each).
var Codes = []*kv.KeyValue{&Ok, &Canceled, &Unknown}
