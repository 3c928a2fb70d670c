package skills

// Version is the version of this publisher SDK.
const Version = "0.1.0"
