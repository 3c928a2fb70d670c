package skillsprotocol

// StoreFile is the file of the server's own Skills Protocol store (blobs
// and bundles published over iii) in its data folder: a bbolt file of the
// skills process (kv.Local), so no engine client can read blobs (other
// users' run outputs and logs) or rewrite a published bundle through
// state::*, as it could when both lived in engine state.
const StoreFile = "skills-protocol.db"
