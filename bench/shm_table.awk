# bench/shm_table.awk - shm_sweep.sh's table: lines "shm coll size ratio"
# (shm 0 or 1) in; one row per collective out, "ratio without -> with"
# per size, each the median over the runs. Needs bench/stats.awk first.
{ key = $2 SUBSEP $3; r[$1, key] = r[$1, key] " " $4
  if (!($2 in cs)) { cs[$2] = 1; colls[++nc] = $2 }
  if (!($3 in ss)) { ss[$3] = 1; sizes[++nsz] = $3 } }
END {
    # sizes ascending
    for (i = 2; i <= nsz; i++)
        for (j = i; j > 1 && sizes[j - 1] + 0 > sizes[j] + 0; j--) {
            t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t
        }
    printf "| collective |"
    for (i = 1; i <= nsz; i++) printf " %s |", human(sizes[i])
    printf "\n|---|"
    for (i = 1; i <= nsz; i++) printf "---:|"
    printf "\n"
    for (c = 1; c <= nc; c++) {
        printf "| %s |", colls[c]
        for (i = 1; i <= nsz; i++) {
            key = colls[c] SUBSEP sizes[i]
            if ((0, key) in r && (1, key) in r)
                printf " %.2f -> %.2f |", median(r[0, key]), median(r[1, key])
            else
                printf " |"
        }
        printf "\n"
    }
}