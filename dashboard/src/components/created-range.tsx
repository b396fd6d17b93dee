import { toLocal } from '../api/filters';

/** The "created from / until" fields of a list's filter form (`createdGte`, `createdLte`). */
export function CreatedRangeFields({ filters }: { filters: { createdGte?: string; createdLte?: string } }) {
  return (
    <>
      <label>
        Created from
        <input type="datetime-local" name="createdGte" defaultValue={toLocal(filters.createdGte)} />
      </label>
      <label>
        Created until
        <input type="datetime-local" name="createdLte" defaultValue={toLocal(filters.createdLte)} />
      </label>
    </>
  );
}
