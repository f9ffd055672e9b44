from fastapi import APIRouter

from ...catalog import HISTOGRAMS, METRICS
from ...models import HistogramPublic, MetricCatalog, MetricPublic

router = APIRouter(tags=["statistics"])


@router.get("/metrics", response_model=MetricCatalog, summary="Metric catalog")
def catalog() -> MetricCatalog:
    return MetricCatalog(metrics=[
        MetricPublic(
            name=m.name, family=m.family, unit=m.unit, noun=m.noun, description=m.description,
            dimensions=list(m.all_dims),
            histograms=[HistogramPublic(name=h, unit=HISTOGRAMS[h].unit, lo=HISTOGRAMS[h].lo, hi=HISTOGRAMS[h].hi)
                        for h in m.hists],
        )
        for m in METRICS.values()
    ])
