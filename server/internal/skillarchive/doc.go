// Package skillarchive writes a skill (SKILL.md and its files) as a .zip
// or a .tar.gz, and reads such archives, and any other an agent or a user
// hands over, without trusting them.
//
// # Writing
//
// [NewSkill] (files given as bytes), [SkillFromFS] (an fs.FS, read as it
// is written) and [NewLazySkill] (files opened one at a time while the
// archive is written, each saying whether it is executable) check the
// skill once: SKILL.md at its root, every path valid
// under the reading rules below, no duplicates. [Skill.WriteZip] and
// [Skill.WriteTarGz] then stream it to an io.Writer. Both layouts the
// world asks for are offered:
//
//   - [Wrapped] (the default): one top folder named after the skill, with
//     SKILL.md at its root ("pdf/SKILL.md", "pdf/scripts/x.py"). This is
//     what the skills APIs accept for upload. Anthropic's Create Skill
//     (POST /v1/skills, parameter `files`): "All files must be in the same
//     top-level directory and must include a SKILL.md file at the root of
//     that directory" (API reference, and the `files` docstring of every
//     official SDK, e.g. anthropic-sdk-python
//     src/anthropic/types/beta/skill_create_params.py). OpenAI's Skills
//     guide (https://developers.openai.com/api/docs/guides/tools-skills,
//     "Create a skill"): "upload a .zip that contains a single top-level
//     folder"; a directory upload names every part "inside a single
//     top-level folder".
//   - [Flat]: the skill folder's contents at the archive's root
//     ("SKILL.md", "scripts/x.py"), which is what the Agent Skills
//     discovery RFC v0.2.0 serves for `"type": "archive"` ("files are
//     placed at the root, not nested inside a wrapper directory";
//     agentskills.io/well-known-uri, "Archive structure").
//
// The output is deterministic: entries sorted by path (byte order), every
// folder announced once before its first file, a fixed time
// (1980-01-01T00:00:00Z, the earliest a zip can hold) on every entry,
// mode 0644 for files (0755 for the ones marked executable) and 0755 for
// folders, no owner names or ids, a gzip header without name or time. The
// same skill gives the same bytes, hence the same sha256, for a given
// build (compress/flate's output has been stable across Go releases but is
// not promised to be; pin the files' digests when bytes must agree across
// builds).
//
// # Reading
//
// [ReadZip], [ReadTarGz], [ReadTar] and [Read] (which tells the three
// apart by their first bytes) return the archive's files in memory,
// sorted by path, or one error naming the entry and the rule it broke
// ([*EntryError]). What is refused:
//
//   - names that are not valid UTF-8, hold a NUL or another control
//     character, a backslash, an empty, "." or ".." component (zip slip),
//     start with '/' or a drive letter, or are over 4096 bytes (255 per
//     component); "./" at the start is accepted (tar -C dir .);
//   - two entries with the same name, two files whose names differ only in
//     letter case (they overwrite each other on macOS and Windows), a name
//     that is both a file and a folder;
//   - device files, FIFOs, sockets and any other special entry; encrypted
//     zip entries;
//   - links that do not resolve, inside the archive, to a regular file of
//     the archive: absolute targets, targets that leave the root, dangling
//     links, links to a folder, chains longer than 40. A link that does is
//     kept as a copy of its target's bytes. Why not refuse every link: the
//     discovery RFC only asks to reject links that resolve outside the
//     skill directory, and the server itself serves a symlinked file
//     inside a skill folder; why not keep links as links: what a link
//     means depends on where it is unpacked, while a copy means the same
//     everywhere and can never be used to write through it (the classic
//     "symlink, then a file under it" escape cannot happen because
//     nothing is ever written through a link);
//   - more than Limits.MaxEntries entries (folders and skipped ones too) or
//     Limits.MaxFiles files (copies of links too);
//   - a file over Limits.MaxFileBytes, or files over Limits.MaxTotalBytes
//     together, counted on the bytes actually inflated, never on the sizes
//     the archive declares (a declared size over a cap is refused before
//     anything is inflated);
//   - decompression bombs: more than Limits.MaxInflated bytes inflated in
//     all (a tar.gz inflates the entries it skips, and its headers, too),
//     or, past the first MiB, more than Limits.MaxRatio inflated bytes per
//     compressed byte; zip entries whose data overlap (one compressed
//     stream listed many times).
//
// Options.Skip leaves entries out unread (hidden files, say) after their
// names passed the rules: a skipped name is never written, so it cannot
// smuggle anything in. [WriteTree] writes what was read into a new folder
// through an os.Root.
package skillarchive
