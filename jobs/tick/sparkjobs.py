"""How many Spark jobs, stages and tasks one tick ran (issue 42: Spark pays per job, not per
row): read from the driver's status tracker, by job id — ids are given out in order, so the
jobs of a tick are those after the last id seen before it, whatever thread started them."""
from __future__ import annotations


class JobCount:
    """Started before a tick's first Spark operation; counts() after its last one."""

    def __init__(self, spark):
        # a Spark Connect client has no status tracker (the jobs run in the server's
        # application): counts() is then empty and the tick's summary says nothing of jobs
        from jobs.tick.spark import is_connect_session

        self.tracker = None
        if not is_connect_session(spark):
            self.tracker = spark.sparkContext.statusTracker()
            self.first = self._last_id() + 1

    def _ids(self) -> list[int]:
        t = self.tracker
        return list(t.getJobIdsForGroup(None)) + list(t.getActiveJobsIds())

    def _last_id(self) -> int:
        return max(self._ids(), default=-1)

    def counts(self) -> dict:
        """{"spark_jobs", "spark_stages", "spark_tasks"} of the jobs since construction
        (stages and tasks of the jobs the tracker still retains: spark.ui.retainedJobs)."""
        t = self.tracker
        if t is None:
            return {}
        last = self._last_id()
        ids = sorted(i for i in set(self._ids()) if i >= self.first)
        stages: set[int] = set()
        for i in ids:
            info = t.getJobInfo(i)
            if info is not None:
                stages.update(info.stageIds)
        tasks = 0
        for s in stages:
            info = t.getStageInfo(s)
            if info is not None:
                tasks += info.numTasks
        return {"spark_jobs": max(0, last - self.first + 1), "spark_stages": len(stages),
                "spark_tasks": tasks}
