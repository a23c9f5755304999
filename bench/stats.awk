# bench/stats.awk - functions the benchmark tables share; load it before
# the table's own program: awk -f bench/stats.awk -f bench/<table>.awk

# The median of the numbers in a space-separated list ("" if none).
function median(list,   n, v, i, j, t) {
    n = split(list, v, " ")
    if (n == 0) return ""
    for (i = 2; i <= n; i++)
        for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
            t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
        }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
# A byte count as the tables print it: 8 B, 4 KiB, 2 MiB.
function human(b) {
    if (b >= 1048576) return sprintf("%g MiB", b / 1048576)
    if (b >= 1024) return sprintf("%g KiB", b / 1024)
    return b " B"
}
