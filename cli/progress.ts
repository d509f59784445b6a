/** Loading progress on stderr: a bar on a terminal, a few plain lines otherwise (logs, CI). */
export function modelProgress(label: string): (loaded: number, total: number) => void {
  let lastPct = -1;
  const tty = process.stderr.isTTY;
  return (loaded, total) => {
    const pct = total > 0 ? Math.floor((loaded / total) * 100) : 100;
    if (pct === lastPct) return;
    if (!tty && pct !== 100 && pct - lastPct < 25) return;
    lastPct = pct;
    const mib = (n: number) => (n / 2 ** 20).toFixed(1);
    if (tty) {
      const width = 30;
      const fill = Math.round((pct / 100) * width);
      process.stderr.write(`\r${label} [${'#'.repeat(fill)}${'.'.repeat(width - fill)}] ${pct}% ${mib(loaded)}/${mib(total)} MiB`);
      if (pct === 100) process.stderr.write('\n');
    } else {
      process.stderr.write(`${label}: ${pct}% (${mib(loaded)}/${mib(total)} MiB)\n`);
    }
  };
}
