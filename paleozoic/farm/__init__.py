"""Boards that measure blocks: this process (`LocalBoard`), a Ray cluster of them
(`RayFarm`, `pip install 'paleozoic[ray]'`), or a simulation of many (`SimulatedFarm`).

A measured search (paleozoic.optimize.measured.MeasuredOracle) hands a farm batches of
blocks, each batch one runtime session on one board, and takes the timings back as they
come. Which board measured what never changes a timing's key (paleozoic.optimize.
measurements), so on a deterministic clock the same plan comes out whatever the number of
boards.
"""

from __future__ import annotations

from paleozoic.farm.service import Farm, LocalBoard

__all__ = ["Farm", "LocalBoard"]
