"""What each Console page shows, built from what the engine computes and the runtime committed: the run page and
its feeds, the graph, the Gate inbox, costs, the timeline, replay, forks, comparisons, the forms of events' models.
The views (console/views/) and the live consumers (console/consumers/) both render from here, so a page and its
live fragments always agree."""
