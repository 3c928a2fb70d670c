package registry

// RustDebugQuote exposes rustDebugQuote to the external test package.
var RustDebugQuote = rustDebugQuote
