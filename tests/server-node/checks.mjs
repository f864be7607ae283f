// The checks the client tests print: "ok: what" or "FAIL: what", then one verdict line; the
// process exits 1 when any check failed (the C++ runners look for "ALL OK").
let failures = 0;

export function check(cond, what) {
  if (!cond) {
    failures++;
    console.error(`FAIL: ${what}`);
  } else {
    console.log(`ok: ${what}`);
  }
}

export function finish() {
  if (failures) {
    console.error(`${failures} check(s) failed`);
    process.exit(1);
  }
  console.log('ALL OK');
}
