// Package published mirrors the skills the registry's state holds (the
// skills scope, written by skills::register) into the catalog's
// "published" source, so listings, the index and reads never re-list and
// re-parse the scope (upstream does on every read). A Mirror either holds
// each body in the catalog (state shared with other instances, reached
// over iii) or leaves it in the store of this process and reads it per
// use, keeping the skills read again hot (the embedded engine).
package published
