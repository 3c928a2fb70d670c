// Validates each folder given with skills-ref (npm) and prints {"version", "errors": {folder: [message]}}.
//
// `skills-ref validate DIR` (the package's CLI) prints the list that validate() returns for DIR
// and exits 1 when it is not empty; one process for every folder keeps the comparison quick
// (skillsref_test.go runs the CLI too, on two folders).
import { validate, version } from "skills-ref";

const errors = {};
for (const dir of process.argv.slice(2)) {
  errors[dir] = await validate(dir);
}
console.log(JSON.stringify({ version, errors }));
