/* Built without web/node_modules (run scripts/install-deps.sh): no uPlot, charts show a note. */
