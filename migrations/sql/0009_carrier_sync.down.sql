DROP TABLE tb_carrier_sync;
